#pragma once
// How an execute call's run becomes a CallToolResult: the program's result (exit code, output,
// images, files written) or a tool error in words the model can act on, and the outcome the
// metrics count.
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "sandbox/sandbox.hpp"
#include "server/metrics/metrics.hpp"
#include "session/session.hpp"

namespace sandgate::server {

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

// Why the sandbox failed or could not be made, in the gateway's own words (never program
// output), for the operator's log; nothing when it did not fail.
std::optional<std::string> sandbox_failure(const session::ExecuteResult& executed);

}  // namespace sandgate::server
