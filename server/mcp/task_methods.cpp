#include "task_methods.hpp"

#include <boost/asio/this_coro.hpp>

#include "common/logging.hpp"
#include "server/tasks/task_runner.hpp"
#include "session/session_id.hpp"

namespace sandgate::server {
namespace asio = boost::asio;
using nlohmann::json;

namespace {

constexpr const char* kRelatedTask = "io.modelcontextprotocol/related-task";

// params.taskId, when it has the shape of an id this gateway makes (hostile text otherwise:
// never echoed).
std::optional<std::string> task_id_of(const json& params) {
  if (!params.is_object()) return std::nullopt;
  auto it = params.find("taskId");
  if (it == params.end() || !it->is_string()) return std::nullopt;
  std::string id = it->get<std::string>();
  if (!session::looks_like_task_id(id)) return std::nullopt;
  return id;
}

json unknown_task(const json& request_id) {
  return jsonrpc::error(request_id, jsonrpc::invalid_params,
                        "Invalid params: unknown task (params.taskId names no task of yours; "
                        "tasks are kept for their ttl)");
}

}  // namespace

json task_capabilities_2025() {
  return {{"tasks",
           {{"list", json::object()},
            {"cancel", json::object()},
            {"requests", {{"tools", {{"call", json::object()}}}}}}}};
}

bool is_task_method_2025(std::string_view method) {
  return method == "tasks/get" || method == "tasks/result" || method == "tasks/list" ||
         method == "tasks/cancel";
}

json task_json_2025(const TaskView& task) {
  json out = {{"taskId", task.id},
              {"status", task_status_name(task.status)},
              {"createdAt", rfc3339(task.created)},
              {"lastUpdatedAt", rfc3339(task.updated)},
              {"ttl", task.ttl.count()},
              {"pollInterval", task.poll_interval.count()}};
  if (!task.status_message.empty()) out["statusMessage"] = task.status_message;
  return out;
}

asio::awaitable<json> start_task_2025(TaskStore& store, const ToolRegistry& tools, ToolCall call,
                                      const jsonrpc::Message& request) {
  const json& p = request.params;
  Tool* tool = p.contains("name") && p["name"].is_string()
                   ? tools.find(p["name"].get<std::string>())
                   : nullptr;
  if (!tool)
    co_return jsonrpc::error(request.id, jsonrpc::invalid_params,
                             "tools/call needs params.name naming a tool");
  if (tool->task_support() == TaskSupport::forbidden)
    co_return jsonrpc::error(request.id, jsonrpc::method_not_found,
                             "Tool " + tool->name() + " cannot run as a task");
  const json& task = p["task"];
  std::optional<std::chrono::milliseconds> ttl;
  if (!task.is_object())
    co_return jsonrpc::error(request.id, jsonrpc::invalid_params,
                             "Invalid params: params.task must be an object ({\"ttl\": ms})");
  if (auto t = task.find("ttl"); t != task.end() && !t->is_null()) {
    if (!t->is_number_unsigned())
      co_return jsonrpc::error(request.id, jsonrpc::invalid_params,
                               "Invalid params: params.task.ttl must be a whole number of ms");
    ttl = std::chrono::milliseconds(
        std::min<std::uint64_t>(t->get<std::uint64_t>(), 1ull << 40));  // clamped by the store
  }
  auto created = store.create(call.tenant->name, ttl);
  if (!created.task) co_return jsonrpc::error(request.id, jsonrpc::server_error, created.refusal);
  call.arguments = p.contains("arguments") ? p["arguments"] : json::object();
  run_as_task(store, *tool, std::move(call), created, co_await asio::this_coro::executor);
  co_return jsonrpc::result(request.id, {{"task", task_json_2025(*created.task)}});
}

namespace {

// tasks/list: the tenant's own tasks, a page at a time.
json list_tasks_2025(TaskStore& store, const std::string& tenant, const jsonrpc::Message& request) {
  std::string cursor;
  if (request.params.is_object() && request.params.contains("cursor")) {
    if (!request.params["cursor"].is_string())
      return jsonrpc::error(request.id, jsonrpc::invalid_params,
                            "Invalid params: cursor must be a string");
    cursor = request.params["cursor"].get<std::string>();
  }
  auto page = store.list(tenant, cursor);
  if (page.bad_cursor)
    return jsonrpc::error(request.id, jsonrpc::invalid_params, "Invalid params: unknown cursor");
  json list = json::array();
  for (const auto& task : page.tasks) list.push_back(task_json_2025(task));
  json result = {{"tasks", std::move(list)}};
  if (!page.next_cursor.empty()) result["nextCursor"] = page.next_cursor;
  return jsonrpc::result(request.id, std::move(result));
}

// tasks/cancel, idempotent for a task that is cancelled already.
json cancel_task_2025(TaskStore& store, const std::string& tenant, const std::string& id,
                      const jsonrpc::Message& request) {
  auto cancelled = store.cancel(id, tenant);
  switch (cancelled.outcome) {
    case TaskStore::CancelOutcome::unknown:
      return unknown_task(request.id);
    case TaskStore::CancelOutcome::already_terminal:
      return jsonrpc::error(request.id, jsonrpc::invalid_params,
                            std::string("Invalid params: the task has already ended (") +
                                task_status_name(cancelled.task->status) + ")");
    case TaskStore::CancelOutcome::cancelled:
      log_event(LogLevel::info, "task_cancelled",
                {{"task", std::string(session::log_prefix(id))}, {"tenant", tenant}});
      return jsonrpc::result(request.id, task_json_2025(*cancelled.task));
  }
  return unknown_task(request.id);  // not reached: every outcome answers
}

// tasks/result: waits for the end, then answers exactly what the call would have.
asio::awaitable<json> task_result_2025(TaskStore& store, const std::string& tenant,
                                       const std::string& id, const jsonrpc::Message& request,
                                       std::shared_ptr<CallEvents> events,
                                       std::shared_ptr<CancelSignal> cancel) {
  bool too_busy = false, abandoned = false;
  auto task = co_await store.wait_terminal(id, tenant, &too_busy,
                                           std::chrono::steady_clock::time_point::max(),
                                           std::move(cancel), &abandoned);
  if (abandoned) co_return json();  // nobody is there to answer
  if (too_busy)
    co_return jsonrpc::error(request.id, jsonrpc::server_error,
                             "Too many requests wait on this task; poll it with tasks/get");
  if (!task) co_return unknown_task(request.id);
  events->notify("notifications/tasks/status", task_json_2025(*task));
  json related = {{kRelatedTask, {{"taskId", task->id}}}};
  if (task->outcome.contains("error")) {
    const json& e = task->outcome["error"];
    json response = jsonrpc::error(request.id, e.value("code", jsonrpc::internal_error),
                                   e.value("message", std::string("error")));
    if (e.contains("data")) response["error"]["data"] = e["data"];
    co_return response;
  }
  json result = task->outcome.value("result", json::object());
  result["_meta"][kRelatedTask] = related[kRelatedTask];
  co_return jsonrpc::result(request.id, std::move(result));
}

}  // namespace

asio::awaitable<json> answer_task_method_2025(TaskStore& store, std::string tenant,
                                              jsonrpc::Message request,
                                              std::shared_ptr<CallEvents> events,
                                              std::shared_ptr<CancelSignal> cancel) {
  const std::string& m = request.method;
  if (m == "tasks/list") co_return list_tasks_2025(store, tenant, request);
  auto id = task_id_of(request.params);
  if (!id) co_return unknown_task(request.id);
  if (m == "tasks/get") {
    auto task = store.get(*id, tenant);
    if (!task) co_return unknown_task(request.id);
    co_return jsonrpc::result(request.id, task_json_2025(*task));
  }
  if (m == "tasks/cancel") co_return cancel_task_2025(store, tenant, *id, request);
  co_return co_await task_result_2025(store, tenant, *id, request, std::move(events),
                                      std::move(cancel));
}

}  // namespace sandgate::server
