#pragma once
// Runs a tool call as a task: detached from the request that asked for it (whose client may go
// away), with nowhere to send progress or questions, its end recorded in the task store.
#include <boost/asio/any_io_executor.hpp>
#include <chrono>
#include <string>

#include "server/tools/tool.hpp"
#include "task_store.hpp"

namespace sandgate::server {

// Starts `call` of `tool` as the task `created` (made in `store`). The call may take the
// larger timeout of tasks; tasks/cancel and the task's expiry cancel it.
void run_as_task(TaskStore& store, Tool& tool, ToolCall call, const TaskStore::Created& created,
                 const boost::asio::any_io_executor& executor);

// RFC 3339 in UTC with milliseconds, as tasks report their times.
std::string rfc3339(std::chrono::system_clock::time_point time);

}  // namespace sandgate::server
