#pragma once
// MCP 2025-11-25's experimental tasks on a session: tools/call with params.task answers at once
// with a task that runs on (the client may go away), and tasks/get, tasks/result (waits for the
// end, then answers what the call would have), tasks/list and tasks/cancel follow it. A task
// belongs to the tenant that made it.
#include <boost/asio/awaitable.hpp>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "jsonrpc.hpp"
#include "server/tasks/task_store.hpp"
#include "server/tools/tool_registry.hpp"

namespace sandgate::server {

// The capability initialize announces.
nlohmann::json task_capabilities_2025();
bool is_task_method_2025(std::string_view method);

// {taskId, status, statusMessage?, createdAt, lastUpdatedAt, ttl, pollInterval}.
nlohmann::json task_json_2025(const TaskView& task);

// tools/call with params.task: checks the tool may run as a task, starts it, and answers with
// {"task": …} (a JSON-RPC response), or an error response.
boost::asio::awaitable<nlohmann::json> start_task_2025(TaskStore& store, const ToolRegistry& tools,
                                                       ToolCall call,
                                                       const jsonrpc::Message& request);

// tasks/get, tasks/result, tasks/list and tasks/cancel: the JSON-RPC response. `events` carries
// notifications/tasks/status before a tasks/result answer. `cancel` fires when the request is
// cancelled or its client goes: a waiting tasks/result then ends without a response.
boost::asio::awaitable<nlohmann::json> answer_task_method_2025(
    TaskStore& store, std::string tenant, jsonrpc::Message request,
    std::shared_ptr<CallEvents> events, std::shared_ptr<CancelSignal> cancel);

}  // namespace sandgate::server
