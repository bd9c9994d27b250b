#pragma once
// 2026-07-28's Mcp-Param-{Name} headers: a tool argument whose schema says
// "x-mcp-header": "Name" is mirrored in that header (so that intermediaries can route on it
// without reading the body). The server checks every mirrored argument the body carries: its
// header is present, well-formed, and equals the body's value.
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "server/http/http_types.hpp"

namespace sandgate::server {

// What is wrong with the request's Mcp-Param-* headers for a call with these arguments to a
// tool with this inputSchema; "" when nothing is.
std::string param_header_problem(const Request& request, const nlohmann::json& input_schema,
                                 const nlohmann::json& arguments);

// Printable ASCII, space and tab: what a plain (not base64) header value may hold.
bool visible_ascii(std::string_view value);

// A header that mirrors the body (MCP-Protocol-Version, Mcp-Method, Mcp-Name, Mcp-Param-*)
// sent more than once, or "": an intermediary routing on one copy must see what was checked.
std::string repeated_mirror_header(const Request& request);

}  // namespace sandgate::server
