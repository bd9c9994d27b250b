#include "task_tools.hpp"

#include <algorithm>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <memory>

#include "fixture_tool.hpp"
#include "input_required.hpp"

namespace sandgate::conformance {
namespace asio = boost::asio;

namespace {

// A fixture tool that says whether it may run as a task. These tools decide at once (a window of
// 0): from a client that declared the extension, every call of one that may be a task becomes one.
class TaskFixtureTool final : public server::Tool {
 public:
  using Handler = asio::awaitable<json> (*)(ToolCall);
  using BeforeTask = json (*)(const ToolCall&);
  TaskFixtureTool(json definition, server::TaskSupport support, Handler handler,
                  BeforeTask before_task = nullptr)
      : name_(definition.at("name").get<std::string>()),
        definition_(std::move(definition)),
        support_(support),
        handler_(handler),
        before_task_(before_task) {}
  json answer_before_task(const ToolCall& call) override {
    return before_task_ ? before_task_(call) : json();
  }
  const std::string& name() const override { return name_; }
  json definition() const override { return definition_; }
  server::TaskSupport task_support() const override { return support_; }
  asio::awaitable<json> call(ToolCall call) override { return handler_(std::move(call)); }

 private:
  std::string name_;
  json definition_;
  server::TaskSupport support_;
  Handler handler_;
  BeforeTask before_task_;
};

// Sleeps `seconds`, or less when the call is cancelled; false when it was.
// Takes the signal by value: a coroutine's reference parameters outlive nothing.
asio::awaitable<bool> sleep_unless_cancelled(std::shared_ptr<sandgate::CancelSignal> cancel,
                                             double seconds) {
  auto executor = co_await asio::this_coro::executor;
  auto timer = std::make_shared<asio::steady_timer>(executor);
  timer->expires_after(std::chrono::milliseconds(static_cast<long>(seconds * 1000)));
  if (cancel)
    cancel->on_cancel([executor, weak = std::weak_ptr(timer)] {
      asio::post(executor, [weak] {
        if (auto t = weak.lock()) t->cancel();
      });
    });
  auto [ec] = co_await timer->async_wait(asio::as_tuple(asio::use_awaitable));
  co_return !ec;
}

asio::awaitable<json> greet(ToolCall call) {
  std::string name = "World";
  if (auto it = call.arguments.find("name"); it != call.arguments.end() && it->is_string())
    name = it->get<std::string>();
  co_return text_result("Hello, " + name + "!");
}

asio::awaitable<json> slow_compute(ToolCall call) {
  double seconds = 1;
  if (auto it = call.arguments.find("seconds"); it != call.arguments.end() && it->is_number())
    seconds = std::clamp(it->get<double>(), 0.0, 300.0);
  std::string label = "compute";
  if (auto it = call.arguments.find("label"); it != call.arguments.end() && it->is_string())
    label = it->get<std::string>();
  bool slept = co_await sleep_unless_cancelled(call.cancel, seconds);
  if (!slept) co_return json();  // cancelled
  co_return text_result("Computed " + label + " after " + std::to_string(seconds) + " s");
}

asio::awaitable<json> failing_job(ToolCall call) {
  bool slept = co_await sleep_unless_cancelled(call.cancel, 1);
  if (!slept) co_return json();
  co_return text_result("failing_job failed, as it always does", true);
}

asio::awaitable<json> protocol_error_job(ToolCall call) {
  bool slept = co_await sleep_unless_cancelled(call.cancel, 0.2);
  if (!slept) co_return json();
  throw server::ProtocolError(-32603, "Internal error: protocol_error_job failed");
}

std::string string_argument(const ToolCall& call, const char* name, std::string fallback) {
  if (auto it = call.arguments.find(name); it != call.arguments.end() && it->is_string())
    return it->get<std::string>();
  return fallback;
}

// The client's answer to one question (ask_client's {"result": …}), when it accepted.
const json* accepted_content(const json& answer) {
  if (!answer.is_object() || !answer.contains("result")) return nullptr;
  const json& result = answer["result"];
  if (!result.is_object() || result.value("action", std::string()) != "accept") return nullptr;
  auto content = result.find("content");
  return content != result.end() && content->is_object() ? &*content : nullptr;
}

// Asks to confirm the deletion (the task waits in input_required), then says what it did.
asio::awaitable<json> confirm_delete(ToolCall call) {
  std::string filename = string_argument(call, "filename", "file.txt");
  json answer = co_await call.events->ask_client(
      "elicitation/create",
      mrtr::elicit("Delete " + filename + "?", "confirm", "boolean")["params"]);
  const json* content = accepted_content(answer);
  bool confirmed = content && content->value("confirm", false);
  co_return text_result(confirmed ? "Deleted " + filename
                                  : "Kept " + filename + " (not confirmed)");
}

// Asks two questions at once; the task stays input_required until both are answered.
asio::awaitable<json> multi_input(ToolCall call) {
  json questions = {{"name", mrtr::elicit("What is your name?", "name", "string")},
                    {"confirm", mrtr::elicit("Proceed?", "confirm", "boolean")}};
  json answers = co_await call.events->ask_client_all(std::move(questions));
  std::string said;
  for (const char* key : {"name", "confirm"}) {
    const json* content = accepted_content(answers[key]);
    said += std::string(said.empty() ? "" : ", ") + key + ": " +
            (content ? content->dump() : std::string("no answer"));
  }
  co_return text_result("multi_input got " + said);
}

// MRTR before the task: the first round asks for user_name; the call that brings it becomes
// the task, whose result uses it.
json ask_user_name_first(const ToolCall& call) {
  if (mrtr::accepted_string(mrtr::response_for(call.params, "user_name"), "name")) return nullptr;
  return mrtr::input_required(
      {{"user_name", mrtr::elicit("What is your name?", "name", "string")}});
}

asio::awaitable<json> greet_after_input(ToolCall call) {
  auto name = mrtr::accepted_string(mrtr::response_for(call.params, "user_name"), "name");
  bool slept = co_await sleep_unless_cancelled(call.cancel, 0.5);
  if (!slept) co_return json();
  co_return text_result("Hello, " + name.value_or("stranger") + " (from a task)");
}

}  // namespace

void add_task_tools(server::ToolRegistry& tools) {
  auto add = [&tools](json definition, server::TaskSupport support, TaskFixtureTool::Handler h,
                      TaskFixtureTool::BeforeTask before = nullptr) {
    const char* names[] = {"forbidden", "optional", "required"};
    if (support != server::TaskSupport::forbidden)
      definition["execution"] = {{"taskSupport", names[static_cast<int>(support)]}};
    tools.add(std::make_unique<TaskFixtureTool>(std::move(definition), support, h, before));
  };
  add(tool_definition("greet", "Greets by name (never a task)", {{"name", {{"type", "string"}}}}),
      server::TaskSupport::forbidden, greet);
  add(tool_definition("slow_compute", "Sleeps `seconds`, then answers (may run as a task)",
                      {{"seconds", {{"type", "number"}}}, {"label", {{"type", "string"}}}}),
      server::TaskSupport::optional, slow_compute);
  add(tool_definition("failing_job", "Always ends with a tool error (runs only as a task)"),
      server::TaskSupport::required, failing_job);
  add(tool_definition("protocol_error_job", "Fails with a JSON-RPC error (may run as a task)"),
      server::TaskSupport::optional, protocol_error_job);
  add(tool_definition("confirm_delete",
                      "Asks the client to confirm, then deletes (nothing: a fixture); a task "
                      "waiting for input",
                      {{"filename", {{"type", "string"}}}}),
      server::TaskSupport::optional, confirm_delete);
  add(tool_definition("multi_input", "Asks two questions at once (a task waiting for both)"),
      server::TaskSupport::optional, multi_input);
  add(tool_definition("test_tool_with_task",
                      "Gathers user_name through an input_required round, then runs as a task"),
      server::TaskSupport::required, greet_after_input, ask_user_name_first);
}

}  // namespace sandgate::conformance
