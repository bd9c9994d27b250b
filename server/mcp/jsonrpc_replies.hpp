#pragma once
// The replies every MCP rule answers with: a JSON-RPC error under an HTTP status, 202.
#include <string>

#include "jsonrpc.hpp"
#include "server/http/http_types.hpp"

namespace sandgate::server {

// A JSON-RPC error (id null unless given) with this HTTP status.
Reply refuse(const Request& request, http::status status, int code, const std::string& message,
             const nlohmann::json& data = nullptr, const nlohmann::json& id = nullptr);
// 202 Accepted, no body: a notification or response was taken.
Reply accepted(const Request& request);
// 200 with this JSON-RPC message.
Reply json_reply(const Request& request, const nlohmann::json& message);

}  // namespace sandgate::server
