#include "task_runner.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <ctime>

#include "common/logging.hpp"
#include "server/tools/jsonrpc_error_codes.hpp"
#include "session/session_id.hpp"

namespace sandgate::server {
namespace asio = boost::asio;
using nlohmann::json;

namespace {

json refused(const char* why) {
  return json{{"error", {{"code", jsonrpc::method_not_found}, {"message", why}}}};
}

// A task runs with nobody on its request's stream: progress and log messages have nowhere to
// go. Its questions become the task's inputRequests where the era has them.
class DetachedEvents final : public CallEvents {
 public:
  DetachedEvents(TaskStore& store, std::string id, TaskQuestions questions)
      : store_(store), id_(std::move(id)), questions_(questions) {}
  bool wants_progress() const override { return false; }
  void progress(double, std::optional<double>, std::string) override {}
  void log(std::string_view, json) override {}
  asio::awaitable<json> ask_client(std::string method, json params) override {
    json requests = json::object();
    std::string key = "input-" + std::to_string(++asked_);
    requests[key] = {{"method", std::move(method)}, {"params", std::move(params)}};
    json answers = co_await ask_client_all(std::move(requests));
    co_return answers[key];
  }
  asio::awaitable<json> ask_client_all(json requests) override {
    json answers = json::object();
    if (questions_ == TaskQuestions::refused) {
      for (auto& [key, request] : requests.items())
        answers[key] = refused("a task cannot ask its client anything in this protocol revision");
      co_return answers;
    }
    if (!store_.request_input(id_, requests)) {
      for (auto& [key, request] : requests.items())
        answers[key] = refused("the task has ended, or asks too much at once");
      co_return answers;
    }
    for (auto& [key, request] : requests.items()) {
      auto answer = co_await store_.wait_input(id_, key);
      // An answer is the client's result for the request (an ElicitResult, a sampling result).
      if (answer)
        answers[key] = json{{"result", std::move(*answer)}};
      else
        answers[key] = refused("the task ended before its client answered");
    }
    co_return answers;
  }

 private:
  TaskStore& store_;
  std::string id_;
  TaskQuestions questions_;
  std::uint64_t asked_ = 0;
};

// Runs the task's call to its end and records how it ended.
asio::awaitable<void> run_task(TaskStore& store, Tool& tool, ToolCall call, std::string id) {
  json outcome;
  std::string message;
  try {
    json result = co_await tool.call(std::move(call));
    if (result.is_null()) co_return;  // cancelled: tasks/cancel recorded it already
    message = result.value("isError", false) ? "The call ended with a tool error."
                                             : "The call completed.";
    outcome = {{"result", std::move(result)}};
  } catch (const ProtocolError& e) {
    outcome = {{"error", {{"code", e.code}, {"message", e.what()}}}};
    if (!e.data.is_null()) outcome["error"]["data"] = e.data;
    message = "The call failed.";
  } catch (const std::exception& e) {
    outcome = {{"error", {{"code", jsonrpc::internal_error}, {"message", "internal error"}}}};
    message = "The call failed.";
    log_event(LogLevel::error, "task_failed",
              {{"task", std::string(session::log_prefix(id))}, {"error", e.what()}});
  }
  store.finish(id, std::move(outcome), std::move(message));
}

}  // namespace

void run_as_task(TaskStore& store, Tool& tool, ToolCall call, const TaskStore::Created& created,
                 const asio::any_io_executor& executor, TaskQuestions questions) {
  const std::string& id = created.task->id;
  log_event(LogLevel::info, "task_created",
            {{"task", std::string(session::log_prefix(id))},
             {"tenant", call.tenant->name},
             {"tool", tool.name()}});
  call.call_key = "task/" + id;
  call.cancel = created.cancel;
  call.events = std::make_shared<DetachedEvents>(store, id, questions);
  call.as_task = true;
  asio::co_spawn(executor, run_task(store, tool, std::move(call), id), asio::detached);
}

std::string rfc3339(std::chrono::system_clock::time_point time) {
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(time.time_since_epoch()).count();
  std::time_t seconds = static_cast<std::time_t>(ms / 1000);
  std::tm utc{};
  ::gmtime_r(&seconds, &utc);
  char text[40];
  std::size_t n = std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%S", &utc);
  std::snprintf(text + n, sizeof text - n, ".%03dZ", static_cast<int>(ms % 1000));
  return text;
}

}  // namespace sandgate::server
