// ReadyPool's refill (ready_pool.hpp): a background loop keeps `pool.size` ready sandboxes
// built and warm while the host has room to spare, out of the way of real work, and backs off
// after a failed build.
#include <algorithm>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <optional>
#include <utility>

#include "ready_pool.hpp"

namespace sandgate::sandbox {
namespace asio = boost::asio;

namespace {

// After a failed build the pool waits this long, doubled after each further failure up to
// kRefillBackoffMax (a host out of memory or processes, or an interpreter that cannot start,
// must not spend the machine on retries).
constexpr auto kRefillBackoff = std::chrono::seconds(5);
constexpr auto kRefillBackoffMax = std::chrono::minutes(5);
// Without a wake-up, the loop looks again this often (room may have come back, a ready
// sandbox may have reached its lifetime).
constexpr auto kRefillLook = std::chrono::seconds(1);
// A refill starts this long after the last take (or on-demand build), not beside it: what a
// session does first with the sandbox it was given (its first call, a resume's restore) has the
// CPU to itself. Measured on 2 cores, a refill started at once made a resume into a ready
// sandbox slower than one into a new sandbox, and back-to-back new sessions beyond the pool
// a quarter slower than with no pool.
constexpr auto kRefillQuiet = std::chrono::milliseconds(500);
// Sessions arriving closer together than kRefillQuiet would hold the refill off for good.
constexpr auto kRefillDeferMax = std::chrono::seconds(5);

RunRequest warm_up(Language language, std::string code) {
  RunRequest request;
  request.language = language;
  request.code = std::move(code);
  // Importing the data stack takes seconds on a busy host; minutes mean something is wrong.
  request.timeout = std::chrono::seconds(120);
  return request;
}

// Why a warm-up call failed, in words for the operator's log: never the program's output.
std::string warm_up_failure(const char* interpreter, const RunResult& result) {
  std::string why = std::string("the ") + interpreter + " interpreter did not start";
  if (!result.failure.empty()) return why + ": " + result.failure;
  if (result.outcome == RunOutcome::timed_out) return why + ": the warm-up timed out";
  return why + ": its warm-up exited with code " + std::to_string(result.exit_code);
}

bool warmed_up(const RunResult& result) {
  return result.outcome == RunOutcome::completed && result.exit_code == 0;
}

}  // namespace

struct ReadyPool::RefillSchedule {
  std::chrono::milliseconds backoff =
      std::chrono::duration_cast<std::chrono::milliseconds>(kRefillBackoff);
  // After a failure, no build before this: a wake-up (every new session wakes the loop) only
  // makes it wait again.
  Clock::time_point not_before = Clock::now();
  std::optional<Clock::time_point> deferred_since;  // waiting for demand

  void reset_backoff() {
    backoff = std::chrono::duration_cast<std::chrono::milliseconds>(kRefillBackoff);
  }
  void back_off() {
    not_before = Clock::now() + backoff;
    backoff = std::min(backoff * 2,
                       std::chrono::duration_cast<std::chrono::milliseconds>(kRefillBackoffMax));
  }
};

void ReadyPool::start() {
  asio::co_spawn(refill_timer_.get_executor(), refill_loop(), asio::detached);
}

asio::awaitable<void> ReadyPool::refill_loop() {
  RefillSchedule schedule;
  for (;;) {
    if (!forget_ended()) co_return;
    auto now = Clock::now();
    if (now < schedule.not_before) {
      auto retry_at = schedule.not_before;
      co_await wait_until(retry_at);
      continue;
    }
    if (room_for_another()) {
      if (auto deferred = deferred_until(schedule, now)) {
        auto look_at = *deferred;
        co_await wait_until(look_at);
        continue;
      }
      schedule.deferred_since.reset();
      Refill refill = co_await refill_once();
      if (refill == Refill::shut_down) co_return;
      if (refill == Refill::kept) {
        schedule.reset_backoff();
        continue;
      }
      if (refill == Refill::failed) {
        schedule.back_off();
        continue;
      }
    }
    schedule.deferred_since.reset();  // no room: the deferral counts again once there is
    auto look_at = Clock::now() + kRefillLook;
    co_await wait_until(look_at);
  }
}

asio::awaitable<void> ReadyPool::wait_until(Clock::time_point when) {
  refill_timer_.expires_at(when);
  co_await refill_timer_.async_wait(asio::as_tuple(asio::use_awaitable));
}

bool ReadyPool::forget_ended() {
  std::vector<std::shared_ptr<Sandbox>> gone;     // released outside the lock
  std::vector<std::shared_ptr<Sandbox>> surplus;  // ended outside the lock
  {
    std::lock_guard lock(mutex_);
    if (shut_down_) return false;
    auto ended =
        std::partition(ready_.begin(), ready_.end(), [](const auto& s) { return !s->ended(); });
    gone.assign(std::make_move_iterator(ended), std::make_move_iterator(ready_.end()));
    ready_.erase(ended, ready_.end());
    // Demand has passed: the pool shrinks back, its oldest first.
    std::size_t target = target_locked(Clock::now());
    while (ready_.size() > target) {
      surplus.push_back(std::move(ready_.front()));
      ready_.erase(ready_.begin());
    }
  }
  gone.clear();
  for (const auto& s : surplus) s->end(EndReason::closed, "the pool shrank: no recent demand");
  return true;
}

bool ReadyPool::room_for_another() {
  {
    std::lock_guard lock(mutex_);
    if (shut_down_ || stopped_ || ready_.size() >= target_locked(Clock::now())) return false;
  }
  return host_.has_room();
}

std::optional<ReadyPool::Clock::time_point> ReadyPool::deferred_until(RefillSchedule& schedule,
                                                                      Clock::time_point now) const {
  // Real work first: no build while a session's sandbox is built on demand or within
  // kRefillQuiet of the last take — but demand that never lets up defers it by at most
  // kRefillDeferMax (the build then runs at its background CPU share).
  bool building = false;
  Clock::time_point quiet_until;
  {
    std::lock_guard lock(demand_->mutex);
    building = demand_->building > 0;
    quiet_until = demand_->last + kRefillQuiet;
  }
  if (!building && now >= quiet_until) return std::nullopt;
  if (!schedule.deferred_since) schedule.deferred_since = now;
  auto give_in = *schedule.deferred_since + kRefillDeferMax;
  if (now >= give_in) return std::nullopt;
  return std::min(building ? now + kRefillLook : quiet_until, give_in);
}

asio::awaitable<ReadyPool::Refill> ReadyPool::refill_once() {
  auto started = Clock::now();
  std::string why;
  auto sandbox = co_await build_ready(why);
  double seconds = std::chrono::duration<double>(Clock::now() - started).count();
  bool keep = false, failed = false;
  FailureHook report;
  std::shared_ptr<Sandbox> warmed;  // released outside the lock
  {
    std::lock_guard lock(mutex_);
    warmed = std::move(warming_);
    warming_.reset();
    bool gave_way = std::exchange(warming_gave_way_, false);
    if (shut_down_) co_return Refill::shut_down;  // shutdown() ended it with every live sandbox
    if (sandbox && !sandbox->ended() && !stopped_) {
      ready_.push_back(sandbox);
      ++stats_.refills;
      stats_.refill_seconds_total += seconds;
      keep = true;
    } else if (!gave_way && !stopped_) {
      ++stats_.refill_failures;
      failure_ = why.empty() ? "the sandbox ended while it warmed up" : why;
      report = failure_hook_;
      failed = true;
    }
  }
  warmed.reset();
  if (keep) co_return Refill::kept;
  if (sandbox) sandbox->end(EndReason::closed, "the pool is stopped");
  if (!failed) co_return Refill::not_kept;
  if (report) report(failure());
  co_return Refill::failed;
}

asio::awaitable<std::shared_ptr<Sandbox>> ReadyPool::build_ready(std::string& why) {
  auto slot = host_.take_slot();
  if (!slot) {
    why = "no sandbox slot free";
    co_return nullptr;
  }
  {
    // Until the host's build makes it warming (adopt): a create at the cap waits for it to
    // become one it can end, instead of making room from an idle session (take_slot).
    std::lock_guard lock(mutex_);
    build_pending_ = true;
  }
  std::shared_ptr<Sandbox> sandbox;
  try {
    // Marked as warming (not a session's) under the lock that makes it live.
    Limits limits = ready_limits();
    sandbox = co_await host_.build(limits, *slot, *this);
    // Sessions' calls may run beside the warm-up (a refill that demand deferred for
    // kRefillDeferMax starts anyway): the warm-up yields the CPU to them.
    sandbox->warm_in_background();
    why = co_await warm(sandbox);
    if (!why.empty()) {
      sandbox->end(EndReason::closed, why);
      co_return nullptr;
    }
  } catch (const std::exception& e) {
    // SandboxError from build, or a system error (pipes, memfds) from a warm-up call.
    {
      std::lock_guard lock(mutex_);
      build_pending_ = false;
    }
    why = e.what();
    if (sandbox) sandbox->end(EndReason::closed, why);
    co_return nullptr;
  }
  co_return sandbox;
}

asio::awaitable<std::string> ReadyPool::warm(std::shared_ptr<Sandbox> sandbox) {
  // The interpreters start here, not at the session's first call: Python with the preload
  // modules imported, Node with its driver loaded. Their output is nobody's.
  // Named, not made in the call: g++ 12 mishandles temporaries in a coroutine's arguments.
  RunRequest python_warm_up = warm_up(Language::python, preload_cell(config_.preload));
  auto python = co_await sandbox->run(python_warm_up);
  if (!warmed_up(python)) co_return warm_up_failure("Python", python);
  RunRequest node_warm_up = warm_up(Language::javascript, "undefined");
  auto node = co_await sandbox->run(node_warm_up);
  if (!warmed_up(node)) co_return warm_up_failure("JavaScript", node);
  co_return "";
}

}  // namespace sandgate::sandbox
