#pragma once
// JSON-RPC 2.0 messages as MCP uses them: one message per HTTP body (batches were removed in
// 2025-06-18), classified before anything acts on them.
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "server/tools/jsonrpc_error_codes.hpp"

namespace sandgate::server::jsonrpc {

using nlohmann::json;

enum class Kind { request, notification, response, invalid };

struct Message {
  Kind kind = Kind::invalid;
  json id;  // request id (string or number); null when absent or unknown
  std::string method;
  json params = json::object();  // a response's: {"result": …} or {"error": …}
  int error_code = 0;            // for invalid: parse_error or invalid_request
  std::string error;             // for invalid: what is wrong
};

Message parse(std::string_view body);

// A request's params._meta; null when it has none.
const json& meta_of(const Message& message);

json result(const json& id, json result);
json error(const json& id, int code, const std::string& message);
json notification(const std::string& method, json params);

}  // namespace sandgate::server::jsonrpc
