// SandboxHost's pool of ready sandboxes (ready_pool.hpp): a background loop keeps `pool.size`
// of them built and warm while there is room to spare; create() hands one out when it serves
// the request; under pressure they (and the one being built) are the first to go.
#include <algorithm>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <optional>

#include "host.hpp"
#include "sandbox/cgroups/cgroups.hpp"
#include "uid_slots.hpp"

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
// The memory budget's share above which no ready sandbox is built: what is left is for real
// work (new sandboxes are refused at 90 %).
constexpr std::uint64_t kReadyMemoryPercent = 70;

constexpr const char* kGaveWay = "a ready sandbox gave way to real work";

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

}  // namespace

Limits SandboxHost::ready_limits() const {
  // The operator pays for a ready sandbox until it is handed over: no spend cap ends it while
  // it waits (the meter restarts at hand-over). It is replaced at the end of its lifetime.
  Limits limits = config_.limits;
  limits.spend_cap_usd = 1e12;
  return limits;
}

PoolStats SandboxHost::pool_stats() const {
  std::lock_guard lock(mutex_);
  PoolStats stats = pool_stats_;
  stats.ready = ready_.size();
  return stats;
}

std::string SandboxHost::pool_failure() const {
  std::lock_guard lock(mutex_);
  return pool_failure_;
}

void SandboxHost::set_pool_failure_hook(std::function<void(const std::string&)> hook) {
  std::lock_guard lock(mutex_);
  pool_failure_hook_ = std::move(hook);
}

void SandboxHost::wake_refill() {
  asio::post(refill_timer_.get_executor(), [this] { refill_timer_.cancel(); });
}

std::shared_ptr<Sandbox> SandboxHost::take_ready(const Limits& limits) {
  if (config_.pool.size == 0) return nullptr;
  {
    // Any create is real work, one the pool cannot serve too.
    std::lock_guard lock(demand_->mutex);
    demand_->last = std::chrono::steady_clock::now();
  }
  if (!pool_serves(ready_limits(), limits)) {
    std::lock_guard lock(mutex_);
    ++pool_stats_.misses;
    return nullptr;
  }
  for (;;) {
    std::shared_ptr<Sandbox> taken;
    {
      std::lock_guard lock(mutex_);
      if (ready_.empty() || pool_stopped_) {
        ++pool_stats_.misses;
        break;
      }
      taken = std::move(ready_.front());  // the oldest: it has the least lifetime left
      ready_.erase(ready_.begin());
    }
    wake_refill();
    // It may have ended since it was put there (its lifetime, a dead supervisor): then the
    // next one. hand_over refuses an ended sandbox under the sandbox's own lock.
    if (taken->hand_over(limits)) {
      std::lock_guard lock(mutex_);
      ++pool_stats_.hits;
      return taken;
    }
  }
  wake_refill();
  return nullptr;
}

bool SandboxHost::drop_ready() {
  std::shared_ptr<Sandbox> dropped;
  {
    std::lock_guard lock(mutex_);
    if (!ready_.empty()) {
      dropped = std::move(ready_.back());
      ready_.pop_back();
    } else if (warming_ && !warming_->ended()) {
      // The one being built holds a slot and memory too: its warm-up ends with it.
      dropped = warming_;
      warming_gave_way_ = true;
    } else {
      return false;
    }
  }
  dropped->end(EndReason::closed, kGaveWay);
  return true;
}

void SandboxHost::stop_pool() {
  std::vector<std::shared_ptr<Sandbox>> ready;
  std::shared_ptr<Sandbox> warming;
  {
    std::lock_guard lock(mutex_);
    pool_stopped_ = true;
    ready.swap(ready_);
    warming = warming_;
  }
  for (const auto& s : ready) s->end(EndReason::closed, "the pool is stopped");
  if (warming) warming->end(EndReason::closed, "the pool is stopped");
}

bool SandboxHost::room_for_ready() const {
  {
    std::lock_guard lock(mutex_);
    if (stopped_ || pool_stopped_ || making_room_ > 0 || ready_.size() >= config_.pool.size)
      return false;
  }
  // One slot stays free beyond the one a ready sandbox takes: a real create does not find the
  // cap reached because the pool was building (and if it does, the build gives way).
  if (slots_->free_count() < 2) return false;
  const auto& layout = *report_.cgroups;
  return layout.memory_budget == 0 ||
         layout.sandbox_memory_bytes() < layout.memory_budget / 100 * kReadyMemoryPercent;
}

asio::awaitable<std::shared_ptr<Sandbox>> SandboxHost::build_ready(std::string& why) {
  auto slot = slots_->take();
  if (!slot) {
    why = "no sandbox slot free";
    co_return nullptr;
  }
  {
    // Until build() marks it warming: a create at the cap waits for it to become one it can
    // end, instead of making room from an idle session (take_slot).
    std::lock_guard lock(mutex_);
    ready_build_pending_ = true;
  }
  std::shared_ptr<Sandbox> sandbox;
  try {
    // Marked as warming (not a session's) under the lock that makes it live.
    sandbox = co_await build(ready_limits(), *slot, /*warming=*/true);
    // Sessions' calls may run beside the warm-up (a refill that demand deferred for
    // kRefillDeferMax starts anyway): the warm-up yields the CPU to them.
    sandbox->warm_in_background();
    // The interpreters start here, not at the session's first call: Python with the preload
    // modules imported, Node with its driver loaded. Their output is nobody's.
    auto python =
        co_await sandbox->run(warm_up(Language::python, preload_cell(config_.pool.preload)));
    if (python.outcome != RunOutcome::completed || python.exit_code != 0) {
      why = warm_up_failure("Python", python);
      sandbox->end(EndReason::closed, why);
      co_return nullptr;
    }
    auto node = co_await sandbox->run(warm_up(Language::javascript, "undefined"));
    if (node.outcome != RunOutcome::completed || node.exit_code != 0) {
      why = warm_up_failure("JavaScript", node);
      sandbox->end(EndReason::closed, why);
      co_return nullptr;
    }
  } catch (const std::exception& e) {
    // SandboxError from build, or a system error (pipes, memfds) from a warm-up call.
    {
      std::lock_guard lock(mutex_);
      ready_build_pending_ = false;
    }
    why = e.what();
    if (sandbox) sandbox->end(EndReason::closed, why);
    co_return nullptr;
  }
  co_return sandbox;
}

asio::awaitable<void> SandboxHost::refill_loop() {
  auto backoff = std::chrono::duration_cast<std::chrono::milliseconds>(kRefillBackoff);
  // After a failure, no build before this: a wake-up (every new session wakes the loop) only
  // makes it wait again.
  auto not_before = std::chrono::steady_clock::now();
  std::optional<std::chrono::steady_clock::time_point> deferred_since;  // waiting for demand
  for (;;) {
    std::vector<std::shared_ptr<Sandbox>> gone;  // ended outside the lock
    {
      std::lock_guard lock(mutex_);
      if (stopped_) co_return;
      auto ended =
          std::partition(ready_.begin(), ready_.end(), [](const auto& s) { return !s->ended(); });
      gone.assign(std::make_move_iterator(ended), std::make_move_iterator(ready_.end()));
      ready_.erase(ended, ready_.end());
    }
    gone.clear();
    auto now = std::chrono::steady_clock::now();
    if (now < not_before) {
      refill_timer_.expires_at(not_before);
      co_await refill_timer_.async_wait(asio::as_tuple(asio::use_awaitable));
      continue;
    }
    if (room_for_ready()) {
      // Real work first: no build while a session's sandbox is built on demand or within
      // kRefillQuiet of the last take — but demand that never lets up defers it by at most
      // kRefillDeferMax (the build then runs at its background CPU share).
      bool building = false;
      std::chrono::steady_clock::time_point quiet_until;
      {
        std::lock_guard lock(demand_->mutex);
        building = demand_->building > 0;
        quiet_until = demand_->last + kRefillQuiet;
      }
      if (building || now < quiet_until) {
        if (!deferred_since) deferred_since = now;
        auto give_in = *deferred_since + kRefillDeferMax;
        if (now < give_in) {
          refill_timer_.expires_at(std::min(building ? now + kRefillLook : quiet_until, give_in));
          co_await refill_timer_.async_wait(asio::as_tuple(asio::use_awaitable));
          continue;
        }
      }
      deferred_since.reset();
      auto started = std::chrono::steady_clock::now();
      std::string why;
      auto sandbox = co_await build_ready(why);
      double seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
      bool keep = false, failed = false;
      std::function<void(const std::string&)> report;
      std::shared_ptr<Sandbox> warmed;  // released outside the lock
      {
        std::lock_guard lock(mutex_);
        warmed = std::move(warming_);
        warming_.reset();
        bool gave_way = std::exchange(warming_gave_way_, false);
        if (stopped_) co_return;  // shutdown() ended it with every live sandbox
        if (sandbox && !sandbox->ended() && !pool_stopped_) {
          ready_.push_back(sandbox);
          ++pool_stats_.refills;
          pool_stats_.refill_seconds_total += seconds;
          keep = true;
        } else if (!gave_way && !pool_stopped_) {
          ++pool_stats_.refill_failures;
          pool_failure_ = why.empty() ? "the sandbox ended while it warmed up" : why;
          report = pool_failure_hook_;
          failed = true;
        }
      }
      warmed.reset();
      if (keep) {
        backoff = std::chrono::duration_cast<std::chrono::milliseconds>(kRefillBackoff);
        continue;
      }
      if (sandbox) sandbox->end(EndReason::closed, "the pool is stopped");
      if (failed) {
        if (report) report(pool_failure());
        not_before = std::chrono::steady_clock::now() + backoff;
        backoff = std::min(
            backoff * 2, std::chrono::duration_cast<std::chrono::milliseconds>(kRefillBackoffMax));
        continue;
      }
    }
    deferred_since.reset();  // no room: the deferral counts again once there is
    refill_timer_.expires_after(kRefillLook);
    co_await refill_timer_.async_wait(asio::as_tuple(asio::use_awaitable));
  }
}

bool SandboxHost::ready_build_pending() const {
  std::lock_guard lock(mutex_);
  return ready_build_pending_;
}

}  // namespace sandgate::sandbox
