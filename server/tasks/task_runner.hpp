#pragma once
// Runs a tool call as a task: detached from the request that asked for it (whose client may go
// away), with nowhere to send progress, its end recorded in the task store. Its questions to
// the client go through the store as the task's inputRequests where the era has them.
#include <boost/asio/any_io_executor.hpp>
#include <chrono>
#include <string>

#include "server/tools/tool.hpp"
#include "task_store.hpp"

namespace sandgate::server {

// How a task's questions to its client travel.
enum class TaskQuestions {
  refused,         // 2025-11-25: the call gets an error at once
  input_requests,  // 2026-07-28 extension: input_required, answered by tasks/update
};

// Starts `call` of `tool` as the task `created` (made in `store`). The call may take the
// larger timeout of tasks; tasks/cancel and the task's expiry cancel it.
void run_as_task(TaskStore& store, Tool& tool, ToolCall call, const TaskStore::Created& created,
                 const boost::asio::any_io_executor& executor,
                 TaskQuestions questions = TaskQuestions::refused);

// RFC 3339 in UTC with milliseconds, as tasks report their times.
std::string rfc3339(std::chrono::system_clock::time_point time);

}  // namespace sandgate::server
