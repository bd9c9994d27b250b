#pragma once
// The `execute` tool's pure parts: its MCP definition, the validation of its arguments (failures are
// tool errors the model can act on, SEP-1303), and how a run becomes a CallToolResult.
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "server/metrics.hpp"
#include "sandbox/sandbox.hpp"
#include "session/session.hpp"

namespace sandgate::server {

struct ToolLimits {
  std::uint32_t timeout_default_s = 60;
  std::uint32_t timeout_max_s = 300;
  std::uint64_t stdin_max_bytes = 1 << 20;
  std::uint64_t output_max_bytes = 1 << 20;  // --output-max-bytes: bounds the response too
};

nlohmann::json execute_tool_definition(const ToolLimits& limits);

struct ExecuteArguments {
  std::optional<sandbox::RunRequest> request;  // set when valid
  std::string error;                           // what is wrong, when not
};
ExecuteArguments parse_execute_arguments(const nlohmann::json& arguments, const ToolLimits& limits);

// A CallToolResult with isError: true and this text.
nlohmann::json tool_error(const std::string& text);

struct MappedResult {
  nlohmann::json result;  // the CallToolResult
  ExecOutcome outcome;    // for metrics and logs
};
// Consumes the result: the program's output moves into the CallToolResult, never copied.
MappedResult map_execute_result(session::ExecuteResult&& executed,
                                const sandbox::RunRequest& request);

}  // namespace sandgate::server
