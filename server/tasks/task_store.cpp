#include "task_store.hpp"

#include <algorithm>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <charconv>

#include "common/logging.hpp"
#include "session/session_id.hpp"

namespace sandgate::server {
namespace asio = boost::asio;
using nlohmann::json;

struct TaskStore::Task {
  std::string id, tenant;
  std::uint64_t order = 0;  // creation order, for tasks/list
  TaskStatus status = TaskStatus::working;
  std::string status_message;
  std::chrono::system_clock::time_point created, updated;
  Clock::time_point expires;
  std::chrono::milliseconds ttl{0};
  json outcome;
  std::size_t outcome_bytes = 0;
  std::shared_ptr<CancelSignal> cancel = std::make_shared<CancelSignal>();
  // tasks/result requests blocked on this task: each is woken by cancelling its timer.
  std::vector<std::weak_ptr<asio::steady_timer>> waiters;
  // What the task asks its client (key -> request), and answers not yet taken by the task.
  json input_requests = json::object();
  json input_responses = json::object();
  // The task's own waits for answers (not counted against max_waiters_per_task).
  std::vector<std::weak_ptr<asio::steady_timer>> input_waiters;
};

namespace {
// Bounds on what a task may ask at once and on the answers the gateway holds for it: both come
// from hostile sides (a tool's requests, a client's responses).
constexpr std::size_t kMaxOutstandingInputs = 16;
constexpr std::size_t kMaxInputResponseBytes = 1 << 20;
}  // namespace

const char* task_status_name(TaskStatus status) {
  switch (status) {
    case TaskStatus::working:
      return "working";
    case TaskStatus::input_required:
      return "input_required";
    case TaskStatus::completed:
      return "completed";
    case TaskStatus::failed:
      return "failed";
    case TaskStatus::cancelled:
      return "cancelled";
  }
  return "working";
}

bool is_terminal(TaskStatus status) {
  return status == TaskStatus::completed || status == TaskStatus::failed ||
         status == TaskStatus::cancelled;
}

TaskStore::TaskStore(TaskLimits limits, std::string replica_name)
    : limits_(limits), replica_(std::move(replica_name)) {}

TaskView TaskStore::view_of(const Task& task) {
  return {task.id,  task.status, task.status_message, task.created,       task.updated,
          task.ttl, {},          task.outcome,        task.input_requests};
}

namespace {
void wake_all(std::vector<std::weak_ptr<asio::steady_timer>>& waiters) {
  for (auto& weak : waiters)
    if (auto timer = weak.lock()) asio::post(timer->get_executor(), [timer] { timer->cancel(); });
  waiters.clear();
}
}  // namespace

void TaskStore::wake_locked(Task& task) {
  wake_all(task.waiters);
  wake_all(task.input_waiters);
}

void TaskStore::drop_locked(std::map<std::string, std::shared_ptr<Task>>::iterator it) {
  Task& task = *it->second;
  if (!is_terminal(task.status)) task.cancel->cancel();  // its program is killed
  wake_locked(task);
  tasks_.erase(it);
}

void TaskStore::expire_locked(Clock::time_point now) {
  for (auto it = tasks_.begin(); it != tasks_.end();) {
    if (it->second->expires > now) {
      ++it;
      continue;
    }
    log_event(LogLevel::info, "task_expired",
              {{"task", std::string(session::log_prefix(it->first))},
               {"tenant", it->second->tenant},
               {"status", task_status_name(it->second->status)}});
    drop_locked(it++);
  }
}

TaskStore::Created TaskStore::create(const std::string& tenant,
                                     std::optional<std::chrono::milliseconds> ttl) {
  std::lock_guard lock(mutex_);
  auto now = Clock::now();
  expire_locked(now);
  std::vector<std::map<std::string, std::shared_ptr<Task>>::iterator> own;
  for (auto it = tasks_.begin(); it != tasks_.end(); ++it)
    if (it->second->tenant == tenant) own.push_back(it);
  if (own.size() >= limits_.max_per_tenant) {
    // Room is made by the oldest task that has ended; running ones are never dropped for it.
    auto oldest_ended = own.end();
    for (auto o = own.begin(); o != own.end(); ++o)
      if (is_terminal((*o)->second->status) &&
          (oldest_ended == own.end() || (*o)->second->order < (*oldest_ended)->second->order))
        oldest_ended = o;
    if (oldest_ended == own.end())
      return {std::nullopt, nullptr,
              "Too many tasks: this tenant has " + std::to_string(limits_.max_per_tenant) +
                  " tasks running; wait for one to end or cancel one (tasks/cancel)"};
    drop_locked(*oldest_ended);
  }
  auto task = std::make_shared<Task>();
  task->id = session::new_task_id(replica_);
  task->tenant = tenant;
  task->order = next_order_++;
  task->created = task->updated = std::chrono::system_clock::now();
  task->ttl = std::clamp(ttl.value_or(limits_.ttl_max), limits_.ttl_min, limits_.ttl_max);
  task->expires = now + task->ttl;
  task->status_message = "The call is running.";
  tasks_[task->id] = task;
  TaskView view = view_of(*task);
  view.poll_interval = limits_.poll_interval;
  return {std::move(view), task->cancel, ""};
}

void TaskStore::fit_outcome_locked(const std::string& tenant, std::size_t bytes, const Task* keep) {
  for (;;) {
    std::size_t used = 0;
    std::map<std::string, std::shared_ptr<Task>>::iterator oldest = tasks_.end();
    for (auto it = tasks_.begin(); it != tasks_.end(); ++it) {
      const Task& t = *it->second;
      if (t.tenant != tenant) continue;
      used += t.outcome_bytes;
      if (t.outcome_bytes > 0 && &t != keep &&
          (oldest == tasks_.end() || t.order < oldest->second->order))
        oldest = it;
    }
    if (used + bytes <= limits_.max_outcome_bytes_per_tenant || oldest == tasks_.end()) return;
    log_event(LogLevel::info, "task_dropped",
              {{"task", std::string(session::log_prefix(oldest->first))},
               {"tenant", tenant},
               {"reason", "the tenant's task results are over their byte budget"}});
    drop_locked(oldest);
  }
}

void TaskStore::finish(const std::string& id, json outcome, std::string status_message) {
  std::lock_guard lock(mutex_);
  expire_locked(Clock::now());
  auto it = tasks_.find(id);
  if (it == tasks_.end() || is_terminal(it->second->status)) return;
  Task& task = *it->second;
  std::size_t bytes = outcome.dump().size();
  if (bytes > limits_.max_outcome_bytes_per_tenant) {
    outcome = {
        {"error",
         {{"code", -32603},
          {"message", "The task's result (" + std::to_string(bytes) +
                          " bytes) is larger than this tenant may keep (" +
                          std::to_string(limits_.max_outcome_bytes_per_tenant) + " bytes)"}}}};
    bytes = outcome.dump().size();
  }
  fit_outcome_locked(task.tenant, bytes, &task);
  task.status = outcome.contains("error") ? TaskStatus::failed : TaskStatus::completed;
  task.input_requests = json::object();
  task.input_responses = json::object();
  task.status_message = std::move(status_message);
  task.outcome = std::move(outcome);
  task.outcome_bytes = bytes;
  task.updated = std::chrono::system_clock::now();
  wake_locked(task);
}

std::optional<TaskView> TaskStore::get(const std::string& id, const std::string& tenant) {
  std::lock_guard lock(mutex_);
  expire_locked(Clock::now());
  auto it = tasks_.find(id);
  if (it == tasks_.end() || it->second->tenant != tenant) return std::nullopt;
  TaskView view = view_of(*it->second);
  view.poll_interval = limits_.poll_interval;
  return view;
}

TaskStore::Page TaskStore::list(const std::string& tenant, const std::string& cursor,
                                std::size_t page_size) {
  Page page;
  std::uint64_t after = 0;
  if (!cursor.empty()) {
    // Cursors are the creation order of the last task handed out, as decimal digits.
    auto [end, ec] = std::from_chars(cursor.data(), cursor.data() + cursor.size(), after);
    if (ec != std::errc() || end != cursor.data() + cursor.size()) {
      page.bad_cursor = true;
      return page;
    }
    ++after;
  }
  std::lock_guard lock(mutex_);
  expire_locked(Clock::now());
  std::vector<const Task*> own;
  for (const auto& [id, task] : tasks_)
    if (task->tenant == tenant && task->order >= after) own.push_back(task.get());
  std::sort(own.begin(), own.end(), [](auto* a, auto* b) { return a->order < b->order; });
  for (const Task* task : own) {
    if (page.tasks.size() == page_size) {
      page.next_cursor = std::to_string(page.tasks.size() ? own[page_size - 1]->order : 0);
      break;
    }
    TaskView view = view_of(*task);
    view.outcome = nullptr;  // a list names tasks; their results are fetched one by one
    view.poll_interval = limits_.poll_interval;
    page.tasks.push_back(std::move(view));
  }
  return page;
}

TaskStore::Cancelled TaskStore::cancel(const std::string& id, const std::string& tenant) {
  std::shared_ptr<CancelSignal> signal;
  Cancelled answer{CancelOutcome::unknown, std::nullopt};
  {
    std::lock_guard lock(mutex_);
    expire_locked(Clock::now());
    auto it = tasks_.find(id);
    if (it == tasks_.end() || it->second->tenant != tenant) return answer;
    Task& task = *it->second;
    if (is_terminal(task.status)) {
      answer.outcome = CancelOutcome::already_terminal;
    } else {
      // Cancelled before the answer goes out, as the spec asks; the program is killed after.
      task.status = TaskStatus::cancelled;
      task.status_message = "The task was cancelled by request.";
      task.input_requests = json::object();
      task.input_responses = json::object();
      task.outcome = {{"result",
                       {{"content", json::array({{{"type", "text"},
                                                  {"text",
                                                   "Cancelled: the task was cancelled "
                                                   "(tasks/cancel) before it ended."}}})},
                        {"isError", true}}}};
      task.outcome_bytes = task.outcome.dump().size();
      task.updated = std::chrono::system_clock::now();
      wake_locked(task);
      signal = task.cancel;
      answer.outcome = CancelOutcome::cancelled;
    }
    answer.task = view_of(task);
    answer.task->poll_interval = limits_.poll_interval;
  }
  if (signal) signal->cancel();
  return answer;
}

asio::awaitable<std::optional<TaskView>> TaskStore::wait_terminal(
    std::string id, std::string tenant, bool* too_busy, Clock::time_point deadline,
    std::shared_ptr<CancelSignal> abandon, bool* abandoned) {
  auto executor = co_await asio::this_coro::executor;
  // One timer for the whole wait: the task's end, its expiry, the deadline and the abandon
  // signal all wake it (cancelled through the waiter's own executor, never from another thread).
  auto timer = std::make_shared<asio::steady_timer>(executor);
  if (abandon)
    abandon->on_cancel([executor, weak = std::weak_ptr(timer)] {
      asio::post(executor, [weak] {
        if (auto t = weak.lock()) t->cancel();
      });
    });
  for (;;) {
    if (abandon && abandon->cancelled()) {
      if (abandoned) *abandoned = true;
      co_return std::nullopt;
    }
    {
      std::lock_guard lock(mutex_);
      expire_locked(Clock::now());
      auto it = tasks_.find(id);
      if (it == tasks_.end() || it->second->tenant != tenant) co_return std::nullopt;
      Task& task = *it->second;
      if (is_terminal(task.status) || Clock::now() >= deadline) {
        TaskView view = view_of(task);
        view.poll_interval = limits_.poll_interval;
        co_return view;
      }
      std::erase_if(task.waiters, [](auto& w) { return w.expired(); });
      bool listed = std::any_of(task.waiters.begin(), task.waiters.end(),
                                [&](auto& w) { return w.lock() == timer; });
      if (!listed) {
        if (task.waiters.size() >= limits_.max_waiters_per_task) {
          if (too_busy) *too_busy = true;
          co_return std::nullopt;
        }
        task.waiters.push_back(timer);
      }
      // A task that is never finished still ends at its expiry: wake then to see it gone.
      timer->expires_at(std::min(task.expires, deadline));
    }
    co_await timer->async_wait(asio::as_tuple(asio::use_awaitable));
  }
}

bool TaskStore::request_input(const std::string& id, const json& requests) {
  if (!requests.is_object() || requests.empty()) return false;
  std::lock_guard lock(mutex_);
  expire_locked(Clock::now());
  auto it = tasks_.find(id);
  if (it == tasks_.end() || is_terminal(it->second->status)) return false;
  Task& task = *it->second;
  if (task.input_requests.size() + requests.size() > kMaxOutstandingInputs) return false;
  for (const auto& [key, request] : requests.items())
    if (task.input_requests.contains(key) || task.input_responses.contains(key)) return false;
  for (const auto& [key, request] : requests.items()) task.input_requests[key] = request;
  task.status = TaskStatus::input_required;
  task.status_message =
      "The call waits for input from the client (inputRequests; answer with "
      "tasks/update).";
  task.updated = std::chrono::system_clock::now();
  return true;
}

asio::awaitable<std::optional<json>> TaskStore::wait_input(std::string id, std::string key) {
  auto timer = std::make_shared<asio::steady_timer>(co_await asio::this_coro::executor);
  for (;;) {
    {
      std::lock_guard lock(mutex_);
      expire_locked(Clock::now());
      auto it = tasks_.find(id);
      if (it == tasks_.end() || is_terminal(it->second->status)) co_return std::nullopt;
      Task& task = *it->second;
      if (auto answer = task.input_responses.find(key); answer != task.input_responses.end()) {
        json response = std::move(*answer);
        task.input_responses.erase(key);
        co_return response;
      }
      std::erase_if(task.input_waiters, [](auto& w) { return w.expired(); });
      task.input_waiters.push_back(timer);
      timer->expires_at(task.expires);
    }
    co_await timer->async_wait(asio::as_tuple(asio::use_awaitable));
  }
}

bool TaskStore::update(const std::string& id, const std::string& tenant, const json& responses) {
  std::lock_guard lock(mutex_);
  expire_locked(Clock::now());
  auto it = tasks_.find(id);
  if (it == tasks_.end() || it->second->tenant != tenant) return false;
  Task& task = *it->second;
  if (!responses.is_object()) return true;
  bool answered = false;
  for (const auto& [key, response] : responses.items()) {
    // A response for a key not outstanding (never asked, answered already, a task that ended)
    // is ignored, as the extension says; so is one too large to hold.
    if (!task.input_requests.contains(key) || response.dump().size() > kMaxInputResponseBytes)
      continue;
    task.input_requests.erase(key);
    task.input_responses[key] = response;
    answered = true;
  }
  if (!answered) return true;
  if (task.input_requests.empty() && task.status == TaskStatus::input_required) {
    task.status = TaskStatus::working;
    task.status_message = "The call is running.";
  }
  task.updated = std::chrono::system_clock::now();
  wake_all(task.input_waiters);
  return true;
}

void TaskStore::forget(const std::string& id) {
  std::lock_guard lock(mutex_);
  if (auto it = tasks_.find(id); it != tasks_.end()) drop_locked(it);
}

std::size_t TaskStore::size() const {
  std::lock_guard lock(mutex_);
  return tasks_.size();
}

}  // namespace sandgate::server
