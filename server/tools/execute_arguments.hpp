#pragma once
// The validation of execute's arguments: failures are tool errors the model can act on
// (SEP-1303), never protocol errors.
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "sandbox/sandbox.hpp"
#include "server/tools/tool_limits.hpp"
#include "session/session.hpp"

namespace sandgate::server {

struct ExecuteArguments {
  std::optional<sandbox::RunRequest> request;  // set when valid
  std::string sandbox_id;                      // the handle asked for, or empty
  std::string error;                           // what is wrong, when not
  session::CallFiles files;                    // `files` to write, `return_files` to read
  std::string environment;                     // the environment asked for, or empty
};
// `as_task`: the call runs as a task, which may ask for up to task_timeout_max_s.
ExecuteArguments parse_execute_arguments(const nlohmann::json& arguments, const ToolLimits& limits,
                                         bool as_task = false);

}  // namespace sandgate::server
