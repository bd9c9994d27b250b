// SandboxHost's pool of ready sandboxes (ready_pool.hpp): a background loop keeps `pool.size`
// of them built and warm while there is room to spare; create() hands one out when it serves
// the request; under pressure they are the first to go.
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "host.hpp"
#include "uid_slots.hpp"

namespace sandgate::sandbox {
namespace asio = boost::asio;

namespace {

// After a failed build the pool waits this long before it tries again (a host out of memory
// or processes must not spend itself on retries).
constexpr auto kRefillBackoff = std::chrono::seconds(5);
// Without a wake-up, the loop looks again this often (room may have come back, a ready
// sandbox may have reached its lifetime).
constexpr auto kRefillLook = std::chrono::seconds(1);
// The memory budget's share above which no ready sandbox is built: what is left is for real
// work (new sandboxes are refused at 90 %).
constexpr std::uint64_t kReadyMemoryPercent = 70;

RunRequest warm_up(Language language, std::string code) {
  RunRequest request;
  request.language = language;
  request.code = std::move(code);
  // Importing the data stack takes seconds on a busy host; minutes mean something is wrong.
  request.timeout = std::chrono::seconds(120);
  return request;
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

void SandboxHost::wake_refill() {
  asio::post(refill_timer_.get_executor(), [this] { refill_timer_.cancel(); });
}

std::shared_ptr<Sandbox> SandboxHost::take_ready(const Limits& limits) {
  if (config_.pool.size == 0) return nullptr;
  std::shared_ptr<Sandbox> taken;
  {
    std::lock_guard lock(mutex_);
    std::erase_if(ready_, [](const auto& s) { return s->ended(); });
    if (!ready_.empty() && pool_serves(ready_limits(), limits)) {
      taken = std::move(ready_.front());  // the oldest: it has the least lifetime left
      ready_.erase(ready_.begin());
      ++pool_stats_.hits;
    } else {
      ++pool_stats_.misses;
    }
  }
  wake_refill();
  if (taken) taken->hand_over(limits);
  return taken;
}

bool SandboxHost::drop_ready() {
  std::shared_ptr<Sandbox> dropped;
  {
    std::lock_guard lock(mutex_);
    if (ready_.empty()) return false;
    dropped = std::move(ready_.back());
    ready_.pop_back();
  }
  dropped->end(EndReason::closed, "a ready sandbox gave way to real work");
  return true;
}

bool SandboxHost::room_for_ready() const {
  {
    std::lock_guard lock(mutex_);
    if (stopped_ || making_room_ > 0 || ready_.size() >= config_.pool.size) return false;
  }
  // One slot stays free beyond the one a ready sandbox takes: a real create never finds the
  // cap reached because the pool was building.
  if (slots_->free_count() < 2) return false;
  const auto& layout = report_.cgroups;
  return layout.memory_budget == 0 ||
         layout.sandbox_memory_bytes() < layout.memory_budget / 100 * kReadyMemoryPercent;
}

asio::awaitable<std::shared_ptr<Sandbox>> SandboxHost::build_ready(std::string& why) {
  auto slot = slots_->take();
  if (!slot) {
    why = "no sandbox slot free";
    co_return nullptr;
  }
  std::shared_ptr<Sandbox> sandbox;
  try {
    sandbox = co_await build(ready_limits(), *slot);
  } catch (const SandboxError& e) {
    why = e.what();
    co_return nullptr;
  }
  struct Warming {
    SandboxHost& host;
    ~Warming() {
      std::lock_guard lock(host.mutex_);
      host.warming_.reset();
    }
  } warming{*this};
  {
    std::lock_guard lock(mutex_);
    warming_ = sandbox;
  }
  // The interpreters start here, not at the session's first call: Python with the preload
  // modules imported, Node with its driver loaded. Their output is nobody's.
  auto python =
      co_await sandbox->run(warm_up(Language::python, preload_cell(config_.pool.preload)));
  if (python.outcome != RunOutcome::completed || python.exit_code != 0) {
    why = "the Python interpreter did not start: " +
          (python.failure.empty() ? python.stderr_text.substr(0, 200) : python.failure);
    sandbox->end(EndReason::closed, why);
    co_return nullptr;
  }
  auto node = co_await sandbox->run(warm_up(Language::javascript, "undefined"));
  if (node.outcome != RunOutcome::completed || node.exit_code != 0) {
    why = "the JavaScript interpreter did not start: " +
          (node.failure.empty() ? node.stderr_text.substr(0, 200) : node.failure);
    sandbox->end(EndReason::closed, why);
    co_return nullptr;
  }
  co_return sandbox;
}

asio::awaitable<void> SandboxHost::refill_loop() {
  for (;;) {
    {
      std::lock_guard lock(mutex_);
      if (stopped_) co_return;
      std::erase_if(ready_, [](const auto& s) { return s->ended(); });
    }
    auto pause = kRefillLook;
    if (room_for_ready()) {
      auto started = std::chrono::steady_clock::now();
      std::string why;
      auto sandbox = co_await build_ready(why);
      double seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
      std::lock_guard lock(mutex_);
      if (stopped_) {
        if (sandbox) sandbox->end(EndReason::closed, "the gateway is shutting down");
        co_return;
      }
      if (sandbox) {
        ready_.push_back(std::move(sandbox));
        ++pool_stats_.refills;
        pool_stats_.refill_seconds_total += seconds;
        continue;
      }
      ++pool_stats_.refill_failures;
      pool_failure_ = why;
      pause = kRefillBackoff;
    }
    refill_timer_.expires_after(pause);
    co_await refill_timer_.async_wait(asio::as_tuple(asio::use_awaitable));
  }
}

}  // namespace sandgate::sandbox
