#include "tasks_extension.hpp"

#include <atomic>
#include <boost/asio/this_coro.hpp>

#include "mcp_methods.hpp"
#include "common/logging.hpp"
#include "server/tasks/task_runner.hpp"
#include "session/session_id.hpp"

namespace sandgate::server {
namespace asio = boost::asio;
using nlohmann::json;

namespace {

constexpr int kMissingCapability = -32021;

json unknown_task(const json& request_id) {
  return jsonrpc::error(request_id, jsonrpc::invalid_params,
                        "Invalid params: unknown task (params.taskId names no task of yours; "
                        "tasks are kept for their ttlMs)");
}

}  // namespace

bool declares_tasks_extension(const json& capabilities) {
  if (!capabilities.is_object()) return false;
  auto extensions = capabilities.find("extensions");
  return extensions != capabilities.end() && extensions->is_object() &&
         extensions->contains(kTasksExtension);
}

bool is_task_method_2026(std::string_view method) {
  return method == "tasks/get" || method == "tasks/update" || method == "tasks/cancel";
}

json missing_tasks_extension(const json& request_id) {
  json error = jsonrpc::error(request_id, kMissingCapability,
                              "Missing required client capability: the tasks extension (" +
                                  std::string(kTasksExtension) + ")");
  error["error"]["data"] = {
      {"requiredCapabilities", {{"extensions", {{kTasksExtension, json::object()}}}}}};
  return error;
}

json task_json_2026(const TaskView& task, bool detailed) {
  json out = {{"taskId", task.id},
              {"status", task_status_name(task.status)},
              {"createdAt", rfc3339(task.created)},
              {"lastUpdatedAt", rfc3339(task.updated)},
              {"ttlMs", task.ttl.count()},
              {"pollIntervalMs", task.poll_interval.count()}};
  if (!task.status_message.empty()) out["statusMessage"] = task.status_message;
  if (detailed && task.status == TaskStatus::input_required)
    out["inputRequests"] = task.input_requests;
  if (detailed && is_terminal(task.status)) {
    if (task.status == TaskStatus::failed && task.outcome.contains("error"))
      out["error"] = task.outcome["error"];
    else if (task.status == TaskStatus::completed && task.outcome.contains("result")) {
      out["result"] = task.outcome["result"];
      // The call's own result, as a 2026-07-28 answer would have carried it.
      if (out["result"].is_object() && !out["result"].contains("resultType"))
        out["result"]["resultType"] = "complete";
    }
  }
  return out;
}

asio::awaitable<json> call_tool_as_task_2026(TaskStore& store, Tool& tool, ToolCall call,
                                             const jsonrpc::Message& request,
                                             std::chrono::milliseconds immediate) {
  const json& p = request.params;
  call.arguments = p.contains("arguments") ? p["arguments"] : json::object();
  // Rounds of input before the task (MRTR): answered as the plain request they are.
  json before;
  try {
    before = tool.answer_before_task(call);
  } catch (const ProtocolError& e) {
    json error = jsonrpc::error(request.id, e.code, e.what());
    if (!e.data.is_null()) error["error"]["data"] = e.data;
    co_return error;
  }
  if (!before.is_null()) co_return jsonrpc::result(request.id, std::move(before));
  auto created = store.create(call.tenant->name, std::nullopt);
  if (!created.task) {
    // At the tenant's task cap a call that may run plain does, within the plain timeout; only
    // one that must be a task is refused.
    if (tool.task_support() == TaskSupport::required)
      co_return jsonrpc::error(request.id, jsonrpc::server_error, created.refusal);
    co_return co_await run_tool_call(tool, std::move(call), request);
  }
  std::string id = created.task->id, tenant = call.tenant->name;
  // A client that leaves before it learns the task's id can never ask for it: its call ends.
  auto handed_out = std::make_shared<std::atomic<bool>>(false);
  if (call.cancel)
    call.cancel->on_cancel([&store, id, tenant, handed_out] {
      if (!handed_out->load()) store.cancel(id, tenant);
    });
  run_as_task(store, tool, std::move(call), created, co_await asio::this_coro::executor,
              TaskQuestions::input_requests);
  auto task = co_await store.wait_terminal(id, tenant, nullptr,
                                           std::chrono::steady_clock::now() + immediate);
  handed_out->store(true);
  if (task && task->status == TaskStatus::completed && task->outcome.contains("result")) {
    store.forget(id);  // never shown: the call's own result is the answer
    co_return jsonrpc::result(request.id, task->outcome["result"]);
  }
  if (task && task->status == TaskStatus::failed && task->outcome.contains("error")) {
    store.forget(id);
    const json& e = task->outcome["error"];
    json response = jsonrpc::error(request.id, e.value("code", jsonrpc::internal_error),
                                   e.value("message", std::string("error")));
    if (e.contains("data")) response["error"]["data"] = e["data"];
    co_return response;
  }
  if (!task) co_return jsonrpc::error(request.id, jsonrpc::internal_error, "the task went");
  json result = task_json_2026(*task, false);
  result["resultType"] = "task";
  co_return jsonrpc::result(request.id, std::move(result));
}

json answer_task_method_2026(TaskStore& store, const std::string& tenant,
                             const jsonrpc::Message& request) {
  const json& p = request.params;
  std::string id = p.is_object() && p.contains("taskId") && p["taskId"].is_string()
                       ? p["taskId"].get<std::string>()
                       : std::string();
  if (!session::looks_like_task_id(id)) return unknown_task(request.id);
  const std::string& m = request.method;
  if (m == "tasks/get") {
    auto task = store.get(id, tenant);
    if (!task) return unknown_task(request.id);
    return jsonrpc::result(request.id, task_json_2026(*task, true));
  }
  if (m == "tasks/update") {
    if (!p.contains("inputResponses") || !p["inputResponses"].is_object())
      return jsonrpc::error(request.id, jsonrpc::invalid_params,
                            "Invalid params: tasks/update needs params.inputResponses (an object)");
    // Answers for keys not outstanding are ignored, as the extension says; the ack carries
    // nothing of the task (its state is tasks/get's).
    if (!store.update(id, tenant, p["inputResponses"])) return unknown_task(request.id);
    return jsonrpc::result(request.id, json::object());
  }
  // tasks/cancel: acknowledged for a task that already ended too (cancelling is idempotent).
  auto cancelled = store.cancel(id, tenant);
  if (cancelled.outcome == TaskStore::CancelOutcome::unknown) return unknown_task(request.id);
  if (cancelled.outcome == TaskStore::CancelOutcome::cancelled)
    log_event(LogLevel::info, "task_cancelled",
              {{"task", std::string(session::log_prefix(id))}, {"tenant", tenant}});
  return jsonrpc::result(request.id, json::object());
}

}  // namespace sandgate::server
