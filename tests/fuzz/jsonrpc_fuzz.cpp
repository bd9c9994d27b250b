// Fuzz target: a POST body as the MCP endpoint sees it — JSON-RPC classification, then the
// execute tool's argument validation on whatever `arguments` the message carries — and the
// result mapping. Every input must be classified, and every validation must either accept or
// name what is wrong.
#include <cstdlib>

#include "server/mcp/jsonrpc.hpp"
#include "server/tools/execute_tool.hpp"

using namespace sandgate;
using nlohmann::json;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view body(reinterpret_cast<const char*>(data), size);
  auto message = server::jsonrpc::parse(body);
  if (message.kind == server::jsonrpc::Kind::invalid) {
    if (message.error.empty()) std::abort();
    if (message.error_code != server::jsonrpc::parse_error &&
        message.error_code != server::jsonrpc::invalid_request)
      std::abort();
    server::jsonrpc::error(message.id, message.error_code, message.error).dump();
    return 0;
  }
  if (message.kind == server::jsonrpc::Kind::request && !message.id.is_string() &&
      !message.id.is_number_integer())
    std::abort();  // MCP request ids are strings or integers

  server::ToolLimits limits;
  json arguments = message.params.is_object() ? message.params.value("arguments", json()) : json();
  auto parsed = server::parse_execute_arguments(arguments, limits);
  if (parsed.request.has_value() == !parsed.error.empty()) std::abort();
  if (parsed.request) {
    const auto& r = *parsed.request;
    if (r.timeout < std::chrono::seconds(1) ||
        r.timeout > std::chrono::seconds(limits.timeout_max_s) ||
        r.stdin_data.size() > limits.stdin_max_bytes)
      std::abort();
    // Map a run that echoes the code back, as output a program could write.
    session::ExecuteResult executed;
    executed.run.stdout_text = r.code;
    executed.run.exit_code = static_cast<int>(size % 3);
    auto mapped = server::map_execute_result(std::move(executed), r);
    server::jsonrpc::result(message.id, std::move(mapped.result))
        .dump(-1, ' ', false, json::error_handler_t::replace);
  } else {
    server::tool_error(parsed.error).dump();
  }
  return 0;
}
