// TaskStore on its own: its bounds (time to live, tasks and result bytes per tenant, waiters per
// task), and its questions to a task's client: a task asks (input_required with its
// inputRequests), tasks/update answers some or all keys, the task takes each answer; answers
// for keys not outstanding and another tenant's updates change nothing; a cancel ends a wait.
#include "server/tasks/task_store.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <catch2/catch.hpp>

#include "common/cancel_signal.hpp"

using namespace sandgate::server;
using nlohmann::json;

namespace {

json question(const std::string& text) {
  return {{"method", "elicitation/create"}, {"params", {{"message", text}}}};
}

// Starts waiting for `key` of task `id`; `*got` is set when the wait ends (null: no answer).
void start_wait(boost::asio::io_context& io, TaskStore& store, std::string id, std::string key,
                std::shared_ptr<std::optional<json>> got, std::shared_ptr<bool> ended) {
  boost::asio::co_spawn(
      io,
      [&store, id, key, got, ended]() -> boost::asio::awaitable<void> {
        auto answer = co_await store.wait_input(id, key);
        *got = std::move(answer);
        *ended = true;
      },
      boost::asio::detached);
}

}  // namespace

TEST_CASE("a task's questions: partial answers keep it input_required, the last one resumes it",
          "[tasks]") {
  boost::asio::io_context io;
  TaskStore store(TaskLimits{}, "");
  auto created = store.create("alice", std::nullopt);
  REQUIRE(created.task);
  const std::string id = created.task->id;

  REQUIRE(store.request_input(id, {{"name", question("name?")}, {"ok", question("ok?")}}));
  auto asked = store.get(id, "alice");
  REQUIRE(asked);
  CHECK(asked->status == TaskStatus::input_required);
  CHECK(asked->input_requests.size() == 2);
  CHECK(asked->input_requests["name"]["method"] == "elicitation/create");
  // A key already outstanding cannot be asked twice.
  CHECK_FALSE(store.request_input(id, {{"name", question("again?")}}));

  auto name = std::make_shared<std::optional<json>>();
  auto name_ended = std::make_shared<bool>(false);
  start_wait(io, store, id, "name", name, name_ended);
  io.run_for(std::chrono::milliseconds(50));
  CHECK_FALSE(*name_ended);

  // Another tenant cannot answer, and learns nothing.
  CHECK_FALSE(store.update(id, "mallory", {{"name", {{"action", "accept"}}}}));
  // A key not outstanding is ignored.
  CHECK(store.update(id, "alice", {{"unknown-key", {{"ignored", true}}}}));
  CHECK(store.get(id, "alice")->input_requests.size() == 2);

  CHECK(
      store.update(id, "alice", {{"name", {{"action", "accept"}, {"content", {{"name", "A"}}}}}}));
  auto partial = store.get(id, "alice");
  CHECK(partial->status == TaskStatus::input_required);
  CHECK_FALSE(partial->input_requests.contains("name"));
  CHECK(partial->input_requests.contains("ok"));
  io.restart();
  io.run_for(std::chrono::milliseconds(50));
  REQUIRE(*name_ended);
  REQUIRE(name->has_value());
  CHECK((**name)["content"]["name"] == "A");
  // Answered once: a second answer for the same key is not outstanding any more.
  CHECK(store.update(id, "alice", {{"name", {{"action", "decline"}}}}));

  CHECK(store.update(id, "alice", {{"ok", {{"action", "accept"}}}}));
  auto resumed = store.get(id, "alice");
  CHECK(resumed->status == TaskStatus::working);
  CHECK(resumed->input_requests.empty());
}

TEST_CASE("a cancelled task's wait for an answer ends without one", "[tasks]") {
  boost::asio::io_context io;
  TaskStore store(TaskLimits{}, "");
  auto created = store.create("alice", std::nullopt);
  const std::string id = created.task->id;
  REQUIRE(store.request_input(id, {{"ok", question("ok?")}}));
  auto got = std::make_shared<std::optional<json>>();
  auto ended = std::make_shared<bool>(false);
  start_wait(io, store, id, "ok", got, ended);
  io.run_for(std::chrono::milliseconds(50));
  REQUIRE_FALSE(*ended);
  CHECK(store.cancel(id, "alice").outcome == TaskStore::CancelOutcome::cancelled);
  io.restart();
  io.run_for(std::chrono::milliseconds(50));
  CHECK(*ended);
  CHECK_FALSE(got->has_value());
  // An ended task asks nothing more, and its view lists no question.
  CHECK_FALSE(store.request_input(id, {{"again", question("?")}}));
  CHECK(store.get(id, "alice")->input_requests.empty());
}

TEST_CASE("a task's time to live is clamped to the allowed range", "[tasks]") {
  using namespace std::chrono_literals;
  TaskLimits limits;
  limits.ttl_min = 60s;
  limits.ttl_max = 2h;
  TaskStore store(limits, "");
  CHECK(store.create("alice", 1ms).task->ttl == 60s);
  CHECK(store.create("alice", 10h).task->ttl == 2h);
  CHECK(store.create("alice", std::nullopt).task->ttl == 2h);
  CHECK(store.create("alice", 90s).task->ttl == 90s);
}

TEST_CASE("a tenant's tasks are bounded: ended ones make room, running ones never", "[tasks]") {
  TaskLimits limits;
  limits.max_per_tenant = 2;
  TaskStore store(limits, "");
  auto first = store.create("alice", std::nullopt), second = store.create("alice", std::nullopt);
  REQUIRE(first.task);
  REQUIRE(second.task);
  auto refused = store.create("alice", std::nullopt);
  CHECK_FALSE(refused.task);
  CHECK_THAT(refused.refusal, Catch::Contains("Too many tasks"));
  // Another tenant's count is its own.
  CHECK(store.create("bob", std::nullopt).task);
  // Once one has ended, the next takes its place; the running one stays.
  store.finish(first.task->id, {{"result", {{"content", json::array()}}}});
  CHECK(store.create("alice", std::nullopt).task);
  CHECK_FALSE(store.get(first.task->id, "alice"));
  CHECK(store.get(second.task->id, "alice"));
}

TEST_CASE("a tenant's task results are bounded in bytes", "[tasks]") {
  TaskLimits limits;
  limits.max_outcome_bytes_per_tenant = 1000;
  SECTION("a result larger than the budget is replaced by an error saying so") {
    TaskStore store(limits, "");
    auto task = store.create("alice", std::nullopt);
    store.finish(task.task->id, {{"result", {{"text", std::string(5000, 'x')}}}});
    auto view = store.get(task.task->id, "alice");
    REQUIRE(view);
    CHECK(view->status == TaskStatus::failed);
    CHECK_THAT(view->outcome["error"]["message"].get<std::string>(),
               Catch::Contains("larger than this tenant may keep"));
    CHECK(view->outcome.dump().size() < 1000);
  }
  SECTION("a result that does not fit beside the older ones drops the oldest") {
    TaskStore store(limits, "");
    auto older = store.create("alice", std::nullopt), newer = store.create("alice", std::nullopt);
    auto other = store.create("bob", std::nullopt);
    store.finish(older.task->id, {{"result", {{"text", std::string(600, 'o')}}}});
    store.finish(other.task->id, {{"result", {{"text", std::string(600, 'b')}}}});
    store.finish(newer.task->id, {{"result", {{"text", std::string(600, 'n')}}}});
    CHECK_FALSE(store.get(older.task->id, "alice"));
    CHECK(store.get(newer.task->id, "alice")->outcome["result"]["text"] == std::string(600, 'n'));
    // Another tenant's results do not count against this one's.
    CHECK(store.get(other.task->id, "bob"));
  }
}

TEST_CASE("a task's waiters are bounded, and one that leaves frees its place", "[tasks]") {
  TaskLimits limits;
  limits.max_waiters_per_task = 2;
  boost::asio::io_context io;
  TaskStore store(limits, "");
  const std::string id = store.create("alice", std::nullopt).task->id;
  struct Waiter {
    bool ended = false, too_busy = false, abandoned = false;
    std::optional<TaskView> view;
  };
  auto wait = [&](std::shared_ptr<Waiter> w, std::shared_ptr<sandgate::CancelSignal> leave) {
    boost::asio::co_spawn(
        io,
        [&store, id, w, leave]() -> boost::asio::awaitable<void> {
          w->view = co_await store.wait_terminal(id, "alice", &w->too_busy,
                                                 std::chrono::steady_clock::time_point::max(),
                                                 leave, &w->abandoned);
          w->ended = true;
        },
        boost::asio::detached);
    io.restart();
    io.poll();
  };
  auto leaving = std::make_shared<sandgate::CancelSignal>();
  auto first = std::make_shared<Waiter>(), second = std::make_shared<Waiter>();
  wait(first, leaving);
  wait(second, nullptr);
  CHECK_FALSE(first->ended);
  CHECK_FALSE(second->ended);
  // A third is told at once that the task has as many waiters as it may.
  auto third = std::make_shared<Waiter>();
  wait(third, nullptr);
  CHECK(third->ended);
  CHECK(third->too_busy);
  // The first goes (its client closed the connection): its place is free for the next.
  leaving->cancel();
  io.restart();
  io.poll();
  CHECK(first->ended);
  CHECK(first->abandoned);
  auto fourth = std::make_shared<Waiter>();
  wait(fourth, nullptr);
  CHECK_FALSE(fourth->ended);
  // The task's end reaches every waiter still there.
  store.finish(id, {{"result", {{"content", json::array()}}}});
  io.restart();
  io.poll();
  REQUIRE(second->ended);
  REQUIRE(fourth->ended);
  CHECK(second->view->status == TaskStatus::completed);
  CHECK(fourth->view->status == TaskStatus::completed);
  CHECK_FALSE(fourth->too_busy);
}

TEST_CASE("a task holds at most 16 questions at once, and an answer over 1 MiB is not taken",
          "[tasks]") {
  boost::asio::io_context io;
  TaskStore store(TaskLimits{}, "");
  const std::string id = store.create("alice", std::nullopt).task->id;
  json sixteen = json::object();
  for (int i = 0; i < 16; ++i) sixteen["q" + std::to_string(i)] = question("?");
  REQUIRE(store.request_input(id, sixteen));
  CHECK_FALSE(store.request_input(id, {{"one-more", question("?")}}));
  CHECK(store.get(id, "alice")->input_requests.size() == 16);

  auto got = std::make_shared<std::optional<json>>();
  auto ended = std::make_shared<bool>(false);
  start_wait(io, store, id, "q0", got, ended);
  io.run_for(std::chrono::milliseconds(20));
  // An answer over 1 MiB is dropped: the question stays open.
  store.update(id, "alice",
               {{"q0", {{"action", "accept"}, {"content", std::string(2 << 20, 'x')}}}});
  io.restart();
  io.run_for(std::chrono::milliseconds(20));
  CHECK_FALSE(*ended);
  CHECK(store.get(id, "alice")->input_requests.contains("q0"));
  // One within the bound is taken.
  CHECK(store.update(id, "alice", {{"q0", {{"action", "accept"}}}}));
  for (int i = 0; i < 1000 && !*ended; ++i) {
    io.restart();
    io.poll();
  }
  CHECK(*ended);
  // Answered questions free their places.
  CHECK(store.request_input(id, {{"one-more", question("?")}}));
}
