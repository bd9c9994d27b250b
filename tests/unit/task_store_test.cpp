// TaskStore's questions to a task's client on their own: a task asks (input_required with its
// inputRequests), tasks/update answers some or all keys, the task takes each answer; answers
// for keys not outstanding and another tenant's updates change nothing; a cancel ends a wait.
#include "server/tasks/task_store.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <catch2/catch.hpp>

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
