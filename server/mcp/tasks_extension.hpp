#pragma once
// MCP 2026-07-28's tasks extension (io.modelcontextprotocol/tasks, SEP-2663), for requests that
// declare it in their client capabilities: the server decides per call whether a tools/call
// becomes a task (resultType "task"); tasks/get reports it with its result inlined once it
// ended, tasks/update takes input responses, tasks/cancel asks it to stop. A task belongs to
// the tenant that made it.
#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "jsonrpc.hpp"
#include "server/tasks/task_store.hpp"
#include "server/tools/tool.hpp"

namespace sandgate::server {

inline constexpr const char* kTasksExtension = "io.modelcontextprotocol/tasks";

// Whether a request's _meta client capabilities declare the extension.
bool declares_tasks_extension(const nlohmann::json& client_capabilities);
bool is_task_method_2026(std::string_view method);  // tasks/get, tasks/update, tasks/cancel
// -32021 naming the extension as the missing capability.
nlohmann::json missing_tasks_extension(const nlohmann::json& request_id);

// {taskId, status, statusMessage?, createdAt, lastUpdatedAt, ttlMs, pollIntervalMs}, with the
// outcome (result or error) inlined when `detailed` and the task has ended.
nlohmann::json task_json_2026(const TaskView& task, bool detailed);

// tools/call of `tool` for a client that declared the extension: runs the call as a task, and
// answers with the call's own result when it ends within `immediate` (the task is then never
// shown), else with the task (resultType "task"). `client_gone` fires when the client closes its
// stream: before the task was handed out, that cancels it.
boost::asio::awaitable<nlohmann::json> call_tool_as_task_2026(TaskStore& store, Tool& tool,
                                                              ToolCall call,
                                                              const jsonrpc::Message& request,
                                                              std::chrono::milliseconds immediate);

// tasks/get, tasks/update, tasks/cancel: the JSON-RPC response.
nlohmann::json answer_task_method_2026(TaskStore& store, const std::string& tenant,
                                       const jsonrpc::Message& request);

}  // namespace sandgate::server
