// ReadyPool's sandboxes coming and going (ready_pool.hpp): adopted from the host's build,
// handed to a session, ended to give way to real work or when the pool stops.
#include "ready_pool.hpp"

#include <algorithm>
#include <boost/asio/post.hpp>
#include <utility>

namespace sandgate::sandbox {
namespace asio = boost::asio;

namespace {

constexpr const char* kGaveWay = "a ready sandbox gave way to real work";

}  // namespace

ReadyPool::ReadyPool(asio::any_io_executor executor, PoolConfig config, Limits limits,
                     PoolHost host, std::shared_ptr<PoolDemand> demand)
    : config_(std::move(config)),
      limits_(std::move(limits)),
      host_(std::move(host)),
      demand_(demand ? std::move(demand) : std::make_shared<PoolDemand>()),
      refill_timer_(executor) {}

std::size_t ReadyPool::target_locked(Clock::time_point now) {
  auto expired = std::find_if(recent_takes_.begin(), recent_takes_.end(),
                              [&](Clock::time_point t) { return now - t < kDemandWindow; });
  recent_takes_.erase(recent_takes_.begin(), expired);
  if (config_.max_size <= config_.size) return config_.size;
  return std::min<std::size_t>(config_.max_size, config_.size + recent_takes_.size());
}

Limits ReadyPool::ready_limits() const {
  // The operator pays for a ready sandbox until it is handed over: no spend cap ends it while
  // it waits (the meter restarts at hand-over). It is replaced at the end of its lifetime.
  Limits limits = limits_;
  limits.spend_cap_usd = 1e12;
  return limits;
}

PoolStats ReadyPool::stats() const {
  std::lock_guard lock(mutex_);
  PoolStats stats = stats_;
  stats.target = config_.size;
  stats.ready = ready_.size();
  return stats;
}

std::string ReadyPool::failure() const {
  std::lock_guard lock(mutex_);
  return failure_;
}

void ReadyPool::set_failure_hook(FailureHook hook) {
  std::lock_guard lock(mutex_);
  failure_hook_ = std::move(hook);
}

void ReadyPool::wake_refill() {
  asio::post(refill_timer_.get_executor(), [this] { refill_timer_.cancel(); });
}

std::shared_ptr<Sandbox> ReadyPool::take(const Limits& limits) {
  if (config_.size == 0 && config_.max_size == 0) return nullptr;
  {
    // Any create is real work, one the pool cannot serve too.
    std::lock_guard lock(demand_->mutex);
    demand_->last = std::chrono::steady_clock::now();
  }
  if (!pool_serves(ready_limits(), limits)) {
    std::lock_guard lock(mutex_);
    ++stats_.misses;
    return nullptr;
  }
  {
    // Demand the pool serves: its size grows with it (PoolConfig::max_size).
    std::lock_guard lock(mutex_);
    recent_takes_.push_back(Clock::now());
    if (recent_takes_.size() > 4 * std::max<std::size_t>(config_.max_size, 1))
      recent_takes_.erase(recent_takes_.begin());
  }
  for (;;) {
    std::shared_ptr<Sandbox> taken;
    {
      std::lock_guard lock(mutex_);
      if (ready_.empty() || stopped_) {
        ++stats_.misses;
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
      ++stats_.hits;
      return taken;
    }
  }
  wake_refill();
  return nullptr;
}

bool ReadyPool::drop_one() {
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

bool ReadyPool::build_pending() const {
  std::lock_guard lock(mutex_);
  return build_pending_;
}

bool ReadyPool::adopt(const std::shared_ptr<Sandbox>& sandbox, bool host_stopped) {
  std::lock_guard lock(mutex_);
  build_pending_ = false;
  if (host_stopped || stopped_) return false;
  warming_ = sandbox;
  return true;
}

std::vector<std::shared_ptr<Sandbox>> ReadyPool::members() const {
  std::lock_guard lock(mutex_);
  std::vector<std::shared_ptr<Sandbox>> members = ready_;
  if (warming_) members.push_back(warming_);
  return members;
}

void ReadyPool::stop() {
  std::vector<std::shared_ptr<Sandbox>> ready;
  std::shared_ptr<Sandbox> warming;
  {
    std::lock_guard lock(mutex_);
    stopped_ = true;
    ready.swap(ready_);
    warming = warming_;
  }
  for (const auto& s : ready) s->end(EndReason::closed, "the pool is stopped");
  if (warming) warming->end(EndReason::closed, "the pool is stopped");
}

std::vector<std::shared_ptr<Sandbox>> ReadyPool::shut_down() {
  std::vector<std::shared_ptr<Sandbox>> ready;
  {
    std::lock_guard lock(mutex_);
    shut_down_ = true;
    ready.swap(ready_);
  }
  asio::post(refill_timer_.get_executor(), [this] { refill_timer_.cancel(); });
  return ready;
}

}  // namespace sandgate::sandbox
