// SandboxHost's own life: it checks the machine's isolation and sweeps a crashed gateway's
// cgroups when made, starts the meter, and ends every live sandbox at shutdown.
#include "host.hpp"

#include <algorithm>
#include <set>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>

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
  host.build = [this](Limits limits, std::uint32_t slot) {
    return build(std::move(limits), slot, /*warming=*/true);
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
    if (auto s = w.lock(); s && !s->limits().layer_dir.empty()) layers.insert(s->limits().layer_dir);
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
    pool = pool_.members();
  }
  std::size_t n = 0;
  for (const auto& s : live)
    if (!s->ended() && std::find(pool.begin(), pool.end(), s) == pool.end()) ++n;
  return n;
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
  auto ready = pool_.shut_down();  // each is also live: ended below
  asio::post(meter_timer_.get_executor(), [this] { meter_timer_.cancel(); });
  for (const auto& s : snapshot()) s->end(EndReason::closed, "the gateway is shutting down");
}

}  // namespace sandgate::sandbox
