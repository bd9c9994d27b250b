// SandboxHost::create: a uid slot and room in the memory budget (made by the make-room hook
// where needed), the sandbox's cgroups, its supervisor, and its setup report.
#include <unistd.h>

#include <algorithm>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <cerrno>
#include <system_error>

#include "host.hpp"
#include "sandbox/cgroups/cgroups.hpp"
#include "setup_report.hpp"
#include "spawn.hpp"
#include "uid_slots.hpp"

namespace sandgate::sandbox {
namespace asio = boost::asio;

namespace {

constexpr std::uint32_t kProgramId = 1000;  // the programs' uid and gid inside every sandbox

// The memory budget's share above which no ready sandbox is built: what is left is for real
// work (new sandboxes are refused at 90 %).
constexpr std::uint64_t kReadyMemoryPercent = 70;

// The supervisor of sandbox `id` in slot `slot` (which names its host uids), started and
// released into its cgroups, which are made here.
SpawnedSupervisor start_supervisor(const IsolationReport& report, const HostConfig& config,
                                   const std::string& id, std::uint32_t slot, const Limits& limits,
                                   CgroupSet& cgroups) {
  const std::uint32_t uid_base = config.uid_base;
  cgroups = CgroupSet(*report.cgroups, id, limits);
  SpawnRequest request;
  request.ids.privileged = report.privileged;
  request.ids.host_root_id = uid_base + 2 * slot;
  request.ids.host_program_id = uid_base + 2 * slot + 1;
  request.ids.program_id = kProgramId;
  request.work_bytes = limits.work_bytes;
  request.tmp_bytes = limits.tmp_bytes;
  // Without distinct host uids the per-uid count would include the gateway's own processes.
  request.max_processes = report.privileged ? limits.max_processes : 0;
  request.spare_init_idle = config.spare_init_idle;
  request.egress = limits.egress;
  request.tool_channel = limits.tool_channel;
  if (limits.egress_gateway_ca) request.egress_ca_pem = config.egress_ca_pem;
  request.layer_dir = limits.layer_dir;
  request.layer_writable = limits.layer_writable;
  // A build's layer is written by the sandbox's programs: its (empty) top directory becomes
  // theirs. The gateway takes it back when the build ends (environment/).
  if (limits.layer_writable && !limits.layer_dir.empty()) {
    uid_t owner = report.privileged ? request.ids.host_program_id : ::geteuid();
    gid_t group = report.privileged ? request.ids.host_program_id : ::getegid();
    if (::chown(limits.layer_dir.c_str(), owner, group) != 0)
      throw std::system_error(errno, std::generic_category(), "give the layer to the build");
  }
  request.before_release = [&cgroups](pid_t pid) { cgroups.attach(pid); };
  return spawn_supervisor(request);
}

}  // namespace

bool SandboxHost::memory_nearly_used() const {
  // Sandboxes share the memory budget: at 90 % a new one would only push the kernel into
  // killing programs of sandboxes already running.
  const auto& layout = *report_.cgroups;
  return layout.memory_budget > 0 && layout.sandbox_memory_bytes() > layout.memory_budget / 10 * 9;
}

bool SandboxHost::room_for_ready() const {
  {
    std::lock_guard lock(mutex_);
    if (stopped_ || making_room_ > 0) return false;
  }
  // One slot stays free beyond the one a ready sandbox takes: a real create does not find the
  // cap reached because the pool was building (and if it does, the build gives way).
  if (slots_->free_count() < 2) return false;
  const auto& layout = *report_.cgroups;
  return layout.memory_budget == 0 ||
         layout.sandbox_memory_bytes() < layout.memory_budget / 100 * kReadyMemoryPercent;
}

asio::awaitable<bool> SandboxHost::make_room(Pressure pressure) {
  MakeRoom hook;
  {
    std::lock_guard lock(mutex_);
    if (stopped_) co_return false;
    hook = make_room_;
    if (hook) ++making_room_;
  }
  if (!hook) co_return false;
  struct Done {
    SandboxHost& host;
    ~Done() {
      std::lock_guard lock(host.mutex_);
      --host.making_room_;
    }
  } done{*this};
  bool freed = co_await hook(pressure);
  co_return freed;
}

asio::awaitable<std::optional<std::uint32_t>> SandboxHost::take_slot() {
  auto slot = slots_->take();
  auto give_up_at = std::chrono::steady_clock::now() + kMakeRoomPatience;
  while (!slot && std::chrono::steady_clock::now() < give_up_at) {
    // The pool's ready sandboxes give way first: they hold a slot for nobody yet. One whose
    // build has just taken a slot is waited for until it can be ended (milliseconds).
    if (drop_one_ready()) {
      slot = slots_->take();
      continue;
    }
    if (pool_build_pending()) {
      asio::steady_timer pause(co_await asio::this_coro::executor, std::chrono::milliseconds(10));
      co_await pause.async_wait(asio::as_tuple(asio::use_awaitable));
      slot = slots_->take();
      continue;
    }
    bool freed = co_await make_room(Pressure::sandbox_cap);
    slot = slots_->take();
    if (slot || freed) continue;  // freed but taken by another create: ask again
    // Nothing idle to free: worth waiting only while other creates are freeing sandboxes
    // (theirs may be the last idle ones, and a slot of theirs may come back unused).
    {
      std::lock_guard lock(mutex_);
      if (making_room_ == 0 || stopped_) break;
    }
    asio::steady_timer pause(co_await asio::this_coro::executor, std::chrono::milliseconds(50));
    co_await pause.async_wait(asio::as_tuple(asio::use_awaitable));
    slot = slots_->take();
  }
  co_return slot;
}

asio::awaitable<bool> SandboxHost::memory_room() {
  // Near the memory budget, idle sandboxes make room as at the sandbox cap; refused only when
  // they cannot (every other sandbox in use, or what they held was not enough).
  while (memory_nearly_used() && drop_one_ready()) {
  }
  for (int attempt = 0; memory_nearly_used() && attempt < kMakeRoomAttempts; ++attempt) {
    bool freed = co_await make_room(Pressure::memory_budget);
    if (!freed) break;
  }
  co_return !memory_nearly_used();
}

asio::awaitable<std::shared_ptr<Sandbox>> SandboxHost::create(Limits limits) {
  if (!report_.usable())
    throw SandboxError("sandboxes are disabled on this host: " + report_.problem);
  if (auto* pool = pool_for(limits))
    if (auto ready = pool->take(limits)) co_return ready;
  // A miss: this build goes first; the pool's refill waits until no such build runs.
  struct OnDemand {
    std::shared_ptr<PoolDemand> demand;  // not the host: the frame may outlive it
    explicit OnDemand(std::shared_ptr<PoolDemand> d) : demand(std::move(d)) {
      std::lock_guard lock(demand->mutex);
      ++demand->building;
    }
    ~OnDemand() {
      std::lock_guard lock(demand->mutex);
      --demand->building;
      demand->last = std::chrono::steady_clock::now();
    }
  } on_demand(pool_.demand());
  auto made = co_await create_new(limits);
  co_return made;
}

asio::awaitable<std::shared_ptr<Sandbox>> SandboxHost::create_new(Limits limits) {
  // At the cap, an idle sandbox makes room (its slot comes back when it ends). Bounded: another
  // create may take the freed slot first, and every other sandbox may be in use.
  auto slot = co_await take_slot();
  if (!slot)
    throw SandboxError("the gateway runs its maximum number of sandboxes; try again later");
  if (!co_await memory_room()) {
    slots_->give_back(*slot);
    throw SandboxError(
        "the gateway's sandboxes are using their whole shared memory budget; try again when other "
        "sessions have ended");
  }
  co_return co_await build(limits, *slot);
}

asio::awaitable<std::shared_ptr<Sandbox>> SandboxHost::build(Limits limits, std::uint32_t slot,
                                                             ReadyPool* warming) {
  auto release = [slots = slots_, slot] { slots->give_back(slot); };
  std::string id;
  {
    std::lock_guard lock(mutex_);
    if (stopped_) {
      release();
      throw SandboxError("the gateway is shutting down");
    }
    id = "sb" + std::to_string(next_id_++);
  }

  SpawnedSupervisor spawned;
  CgroupSet cgroups;
  try {
    spawned = start_supervisor(report_, config_, id, slot, limits, cgroups);
  } catch (const std::exception& e) {
    cgroups.remove();
    release();
    throw SandboxError(std::string("could not create the sandbox: ") + e.what());
  }

  std::string failure = co_await await_setup_report(spawned, config_.start_timeout);
  if (failure.empty() && limits.egress && !spawned.egress_listener)
    failure = "the sandbox's supervisor reported no egress proxy socket";
  if (failure.empty() && limits.tool_channel && !spawned.tool_listener)
    failure = "the sandbox's supervisor reported no tool channel socket";

  Sandbox::Parts parts{id,
                       limits,
                       config_.prices,
                       spawned.pid,
                       std::move(spawned.control),
                       std::make_unique<CgroupSet>(std::move(cgroups)),
                       release,
                       std::move(spawned.egress_listener),
                       std::move(spawned.tool_listener)};
  auto sandbox = std::make_shared<Sandbox>(std::move(parts));
  if (!failure.empty()) {
    sandbox->end(EndReason::failed, failure);
    throw SandboxError("could not create the sandbox: " + failure);
  }
  {
    std::lock_guard lock(mutex_);
    // shutdown() ends the live sandboxes it sees; one finished after it must not outlive it.
    // The pool's, taken as its warming one under this lock, must not outlive its stop either.
    bool admitted = warming ? warming->adopt(sandbox, stopped_) : !stopped_;
    if (admitted) {
      live_.push_back(sandbox);
      co_return sandbox;
    }
  }
  sandbox->end(EndReason::closed, "the gateway is shutting down");
  throw SandboxError("the gateway is shutting down");
}

asio::awaitable<std::string> SandboxHost::self_test() {
  try {
    // The probe checks that sandboxes work at all; the spend cap and lifetime are the sessions'
    // budget. A tiny cap on a slow host (software emulation) once kept a gateway from ever
    // becoming ready: the probe's own start-up crossed it.
    Limits probe = config_.limits;
    probe.spend_cap_usd = std::max(probe.spend_cap_usd, 0.01);
    probe.lifetime = std::max(probe.lifetime, std::chrono::seconds(60));
    auto sandbox = co_await create_new(probe);  // the probe is of building, not of the pool
    RunRequest request;
    request.language = Language::bash;
    request.code = "true";
    request.timeout = std::chrono::seconds(10);
    auto result = co_await sandbox->run(request);
    sandbox->end(EndReason::closed);
    if (result.outcome != RunOutcome::completed || result.exit_code != 0)
      co_return "a probe program did not run: " + result.failure + result.stderr_text;
    co_return "";
  } catch (const std::exception& e) {
    co_return e.what();
  }
}

}  // namespace sandgate::sandbox
