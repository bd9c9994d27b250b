#pragma once
// The tasks extension's fixture tools (the conformance suite's tasks-* scenarios): greet (never a
// task), slow_compute (may be a task: sleeps `seconds`, stops at tasks/cancel), failing_job
// (must be a task: a tool error after about 1 s) and protocol_error_job (may be a task: fails
// with a JSON-RPC error).
#include "server/tools/tool_registry.hpp"

namespace sandgate::conformance {

void add_task_tools(server::ToolRegistry& tools);

}  // namespace sandgate::conformance
