// SandboxHost's own life: it checks the machine's isolation and sweeps a crashed gateway's
// cgroups when made, starts the meter, and ends every live sandbox at shutdown.
#include "host.hpp"

#include <algorithm>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <set>

#include "isolation_check.hpp"
#include "sandbox/cgroups/cgroups.hpp"
#include "uid_slots.hpp"

namespace sandgate::sandbox {
namespace asio = boost::asio;

SandboxHost::SandboxHost(asio::any_io_executor executor, HostConfig config)
    : executor_(executor),
      config_(config),
      report_(assess_isolation(config)),
      slots_(std::make_shared<Slots>()),
      meter_timer_(executor),
      pool_(executor, config_.pool, config_.limits, pool_host()) {
  slots_->used.assign(config_.max_sandboxes, false);
  swept_ = sweep_orphan_cgroups(*report_.cgroups);
  asio::co_spawn(executor_, meter_loop(), asio::detached);
  if (config_.pool.size > 0 && report_.usable()) pool_.start();
}

PoolHost SandboxHost::pool_host() {
  PoolHost host;
  host.take_slot = [this] { return slots_->take(); };
  host.build = [this](Limits limits, std::uint32_t slot, ReadyPool& pool) {
    return build(std::move(limits), slot, &pool);
  };
  host.has_room = [this] { return room_for_ready(); };
  return host;
}

SandboxHost::~SandboxHost() {
  shutdown();
  // Last: every sandbox has been ended, so the instance cgroups are empty.
  report_.cgroups->release();
}

std::vector<std::shared_ptr<Sandbox>> SandboxHost::snapshot() const {
  std::lock_guard lock(mutex_);
  std::vector<std::shared_ptr<Sandbox>> out;
  for (const auto& w : live_)
    if (auto s = w.lock()) out.push_back(std::move(s));
  return out;
}

std::set<std::string> SandboxHost::layers_in_use() const {
  std::set<std::string> layers;
  std::lock_guard lock(mutex_);
  // The pool's ready sandboxes are in live_ too.
  for (const auto& w : live_)
    if (auto s = w.lock(); s && !s->limits().layer_dir.empty())
      layers.insert(s->limits().layer_dir);
  return layers;
}

std::size_t SandboxHost::live_count() const {
  std::vector<std::shared_ptr<Sandbox>> live, pool;
  {
    // Both at once (the pool's lock is taken under the host's): a sandbox moving from the pool
    // to a session is counted once.
    std::lock_guard lock(mutex_);
    for (const auto& w : live_)
      if (auto s = w.lock()) live.push_back(std::move(s));
    for (auto* p : pools_locked()) {
      auto members = p->members();
      pool.insert(pool.end(), members.begin(), members.end());
    }
  }
  std::size_t n = 0;
  for (const auto& s : live)
    if (!s->ended() && std::find(pool.begin(), pool.end(), s) == pool.end()) ++n;
  return n;
}

std::vector<ReadyPool*> SandboxHost::pools_locked() const {
  std::vector<ReadyPool*> all{const_cast<ReadyPool*>(&pool_)};
  for (const auto& entry : layer_pools_) all.push_back(entry.pool.get());
  return all;
}

std::vector<ReadyPool*> SandboxHost::pools() const {
  std::lock_guard lock(mutex_);
  return pools_locked();
}

bool SandboxHost::drop_one_ready() {
  // Pools are never destroyed before the host: a pointer taken here stays valid.
  for (auto* pool : pools())
    if (pool->drop_one()) return true;
  return false;
}

bool SandboxHost::pool_build_pending() const {
  for (auto* pool : pools())
    if (pool->build_pending()) return true;
  return false;
}

ReadyPool* SandboxHost::pool_for(const Limits& limits) const {
  if (limits.layer_dir.empty()) return const_cast<ReadyPool*>(&pool_);
  std::lock_guard lock(mutex_);
  for (const auto& entry : layer_pools_)
    if (entry.config.layer_dir == limits.layer_dir) return entry.pool.get();
  return nullptr;
}

void SandboxHost::stop_pool() {
  for (auto* pool : pools()) pool->stop();
}

void SandboxHost::set_layer_pools(std::vector<LayerPool> wanted) {
  std::vector<std::shared_ptr<ReadyPool>> started, stopped;
  {
    std::lock_guard lock(mutex_);
    if (stopped_) return;
    std::vector<LayerPoolEntry> next;
    for (auto& config : wanted) {
      auto same = std::find_if(layer_pools_.begin(), layer_pools_.end(),
                               [&](const LayerPoolEntry& e) { return e.config == config; });
      if (same != layer_pools_.end()) {
        next.push_back(std::move(*same));
        layer_pools_.erase(same);
        continue;
      }
      Limits limits = config_.limits;
      limits.layer_dir = config.layer_dir;
      auto pool =
          std::make_shared<ReadyPool>(executor_, config.pool, limits, pool_host(), pool_.demand());
      pool->set_failure_hook(pool_failure_hook_);
      started.push_back(pool);
      next.push_back({std::move(config), std::move(pool)});
    }
    for (auto& gone : layer_pools_) {
      stopped.push_back(gone.pool);
      retired_pools_.push_back(gone.pool);
    }
    layer_pools_ = std::move(next);
  }
  // Its ready sandboxes end, and its refill loop with them: a retired pool costs nothing but
  // its (small) object, kept until the host goes.
  for (auto& pool : stopped) {
    pool->stop();
    pool->shut_down();
  }
  if (report_.usable())
    for (auto& pool : started) pool->start();
}

std::vector<std::pair<std::string, PoolStats>> SandboxHost::layer_pool_stats() const {
  std::vector<std::pair<std::string, PoolStats>> out;
  std::lock_guard lock(mutex_);
  for (const auto& entry : layer_pools_)
    out.emplace_back(entry.config.layer_dir, entry.pool->stats());
  return out;
}

const char* pressure_name(Pressure pressure) {
  return pressure == Pressure::memory_budget ? "memory_budget" : "sandbox_cap";
}

void SandboxHost::set_make_room(MakeRoom make_room) {
  std::lock_guard lock(mutex_);
  make_room_ = std::move(make_room);
}

void SandboxHost::shutdown() {
  {
    std::lock_guard lock(mutex_);
    stopped_ = true;
  }
  // Each ready sandbox is also live: ended below.
  for (auto* pool : pools()) pool->shut_down();
  {
    std::lock_guard lock(mutex_);
    for (auto& retired : retired_pools_) retired->shut_down();
  }
  asio::post(meter_timer_.get_executor(), [this] { meter_timer_.cancel(); });
  for (const auto& s : snapshot()) s->end(EndReason::closed, "the gateway is shutting down");
}

}  // namespace sandgate::sandbox
