#pragma once
// Tasks: tool calls that run on after their request was answered, polled by id (MCP
// 2025-11-25's experimental tasks). The store keeps each task's state and, once it ends, its
// outcome for the task's time to live. Per tenant it is bounded in count and in outcome bytes;
// only the tenant that made a task can see, wait for or cancel it (any other gets "unknown").
//
// Thread-safe: every member may be called from any thread.
#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/cancel_signal.hpp"

namespace sandgate::server {

enum class TaskStatus { working, input_required, completed, failed, cancelled };
const char* task_status_name(TaskStatus status);
bool is_terminal(TaskStatus status);

struct TaskLimits {
  std::size_t max_per_tenant = 100;
  std::size_t max_outcome_bytes_per_tenant = 64u << 20;
  std::chrono::milliseconds ttl_max{std::chrono::hours(2)};
  // Below this a task's outcome could be gone before a client polling at pollInterval sees it.
  std::chrono::milliseconds ttl_min{std::chrono::seconds(60)};
  std::chrono::milliseconds poll_interval{std::chrono::seconds(2)};
  // Clients blocked in tasks/result on one task at once.
  std::size_t max_waiters_per_task = 16;

  bool operator==(const TaskLimits&) const = default;
};

// One task as the methods report it.
struct TaskView {
  std::string id;
  TaskStatus status = TaskStatus::working;
  std::string status_message;
  std::chrono::system_clock::time_point created, updated;
  std::chrono::milliseconds ttl{0};
  std::chrono::milliseconds poll_interval{0};
  // Once terminal: {"result": …} (what the request would have answered) or {"error": {code,
  // message, data?}}; null before.
  nlohmann::json outcome;
  // While input_required: what the task asks its client, key -> {method, params}.
  nlohmann::json input_requests = nlohmann::json::object();
};

class TaskStore {
 public:
  TaskStore(TaskLimits limits, std::string replica_name);

  struct Created {
    std::optional<TaskView> task;
    std::shared_ptr<CancelSignal> cancel;  // fires on tasks/cancel and at the task's expiry
    std::string refusal;                   // why no task was made
  };
  // `ttl`: what the client asked for (clamped); none: the longest allowed.
  Created create(const std::string& tenant, std::optional<std::chrono::milliseconds> ttl);
  // How the task's call ended; ignored when the task was cancelled or is gone. An outcome over
  // the tenant's byte budget is replaced by an error saying so.
  void finish(const std::string& id, nlohmann::json outcome, std::string status_message = {});

  std::optional<TaskView> get(const std::string& id, const std::string& tenant);

  // A running task asks its client (2026-07-28: the client sees the requests on tasks/get and
  // answers with tasks/update). `requests`: key -> {method, params}; the task is input_required
  // until every key is answered. False when the task has ended or is gone, or a key is already
  // outstanding.
  bool request_input(const std::string& id, const nlohmann::json& requests);
  // The client's answer to one key, once it comes; nullopt when the task ends or goes first.
  boost::asio::awaitable<std::optional<nlohmann::json>> wait_input(std::string id, std::string key);
  // tasks/update: hands each answer to the key it names; keys not outstanding are ignored. The
  // task is working again once nothing is outstanding. False when the task is unknown to
  // `tenant`.
  bool update(const std::string& id, const std::string& tenant, const nlohmann::json& responses);

  struct Page {
    std::vector<TaskView> tasks;
    std::string next_cursor;  // empty on the last page
    bool bad_cursor = false;
  };
  // The tenant's tasks, oldest first, `page_size` at a time after `cursor` ("" for the start).
  Page list(const std::string& tenant, const std::string& cursor, std::size_t page_size = 50);

  enum class CancelOutcome { cancelled, unknown, already_terminal };
  struct Cancelled {
    CancelOutcome outcome;
    std::optional<TaskView> task;
  };
  Cancelled cancel(const std::string& id, const std::string& tenant);

  // Waits until the task is terminal, or until `deadline`: its view then (still working when
  // the deadline came first), or nullopt when it is unknown to this tenant or went (expired)
  // while waited for. `too_busy` is set when the task already has its maximum of waiters.
  // `abandon` fires when nobody waits any more (the client went): nullopt then, and `abandoned`
  // is set, so that a request whose client left does not hold its place until the task ends.
  boost::asio::awaitable<std::optional<TaskView>> wait_terminal(
      std::string id, std::string tenant, bool* too_busy = nullptr,
      std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max(),
      std::shared_ptr<CancelSignal> abandon = nullptr, bool* abandoned = nullptr);
  // Forgets a task nobody was told of (its call ended before its id was handed out).
  void forget(const std::string& id);

  std::size_t size() const;

 private:
  struct Task;
  using Clock = std::chrono::steady_clock;
  // Drops tasks past their time to live (a running one is cancelled first). Under mutex_.
  void expire_locked(Clock::time_point now);
  void drop_locked(std::map<std::string, std::shared_ptr<Task>>::iterator it);
  // Makes room for `bytes` more outcome bytes of `tenant`, dropping its oldest ended tasks but
  // `keep`. Under mutex_.
  void fit_outcome_locked(const std::string& tenant, std::size_t bytes, const Task* keep);
  static TaskView view_of(const Task& task);
  static void wake_locked(Task& task);

  TaskLimits limits_;
  std::string replica_;
  mutable std::mutex mutex_;
  std::map<std::string, std::shared_ptr<Task>> tasks_;  // by id
  std::uint64_t next_order_ = 0;
};

}  // namespace sandgate::server
