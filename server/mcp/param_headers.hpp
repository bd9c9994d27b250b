#pragma once
// 2026-07-28's Mcp-Param-{Name} headers: a tool argument whose schema says
// "x-mcp-header": "Name" is mirrored in that header (so that intermediaries can route on it
// without reading the body). The server checks every mirrored argument the body carries: its
// header is present, well-formed, and equals the body's value.
#include <nlohmann/json.hpp>
#include <string>

#include "server/http/http_types.hpp"

namespace sandgate::server {

// What is wrong with the request's Mcp-Param-* headers for a call with these arguments to a
// tool with this inputSchema; "" when nothing is.
std::string param_header_problem(const Request& request, const nlohmann::json& input_schema,
                                 const nlohmann::json& arguments);

}  // namespace sandgate::server
