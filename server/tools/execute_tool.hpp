#pragma once
// The `execute` tool's pure parts: its MCP definition, the validation of its arguments (failures
// are tool errors the model can act on, SEP-1303), and how a run becomes a CallToolResult.
#include <chrono>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "sandbox/sandbox.hpp"
#include "server/metrics.hpp"
#include "session/session.hpp"

namespace sandgate::server {

struct ToolLimits {
  std::uint32_t timeout_default_s = 60;
  std::uint32_t timeout_max_s = 300;
  std::uint64_t stdin_max_bytes = 1 << 20;
  std::uint64_t output_max_bytes = 1 << 20;    // --output-max-bytes: bounds the response too
  std::chrono::seconds progress_interval{5};   // between "running for N s" notifications
  std::chrono::seconds idle_timeout{30 * 60};  // a sandbox handle unused this long ends
  std::uint32_t task_timeout_max_s = 1800;     // timeout_seconds of a call run as a task
  // 2026-07-28 tasks extension: a call still running after this becomes a task.
  std::chrono::milliseconds task_after{10'000};
  // Files in (`files`) and out (`return_files`).
  std::uint64_t file_in_max_bytes = 10 << 20;   // --file-in-max-bytes: one file, decoded
  std::uint64_t files_in_max_bytes = 10 << 20;  // --files-in-max-bytes: all of a call's
  std::uint32_t files_in_max_count = 100;
  std::uint32_t return_files_max = 20;               // --return-files-max
  std::uint64_t file_inline_max_bytes = 256 << 10;   // --file-inline-max-bytes; a call's total
                                                     // inline is 4 times this
  std::uint64_t resource_read_max_bytes = 50 << 20;  // --resource-read-max-bytes
};

nlohmann::json execute_tool_definition(const ToolLimits& limits);
// "30 minutes", for texts the model reads.
std::string idle_text(std::chrono::seconds idle);

struct ExecuteArguments {
  std::optional<sandbox::RunRequest> request;  // set when valid
  std::string sandbox_id;                      // the handle asked for, or empty
  std::string error;                           // what is wrong, when not
  session::CallFiles files;                    // `files` to write, `return_files` to read
};
// `as_task`: the call runs as a task, which may ask for up to task_timeout_max_s.
ExecuteArguments parse_execute_arguments(const nlohmann::json& arguments, const ToolLimits& limits,
                                         bool as_task = false);

// A CallToolResult with isError: true and this text.
nlohmann::json tool_error(const std::string& text);

struct MappedResult {
  nlohmann::json result;  // the CallToolResult
  ExecOutcome outcome;    // for metrics and logs
};
// Consumes the result: the program's output moves into the CallToolResult, never copied.
// `sandbox_id`: the handle the call ran under, reported in structuredContent (empty: none).
MappedResult map_execute_result(session::ExecuteResult&& executed,
                                const sandbox::RunRequest& request,
                                const std::string& sandbox_id = "");

// "Sandbox <id> ... omit sandbox_id to start a new one": why a handle cannot be used.
std::string unusable_handle_text(const std::string& id, const std::string& why);

}  // namespace sandgate::server
