#pragma once
// The host side of all sandboxes of one gateway: what isolation the machine offers, the pool
// of host uids, the spend/lifetime meter that ticks over live sandboxes, and the crash sweep.
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "limits.hpp"
#include "ready_pool.hpp"
#include "sandbox.hpp"

namespace sandgate::sandbox {

// The cgroup layout (cgroups/cgroups.hpp), held by pointer: this header is read by every layer
// above sandbox/, and the cgroup code stays private to sandbox/ (cmake/check_layers.py).
struct CgroupLayout;

// The ready sandboxes of one environment's layer (issue #43): built with Limits::layer_dir, its
// preload imported, sized between `pool.size` and `pool.max_size` by demand.
struct LayerPool {
  std::string layer_dir;
  PoolConfig pool;
  bool operator==(const LayerPool&) const = default;
};

struct HostConfig {
  Limits limits;
  Prices prices;
  std::uint32_t uid_base = 1'000'000;  // host uids [base, base + 2 * max_sandboxes) are ours
  std::uint32_t max_sandboxes = 1024;
  std::chrono::milliseconds meter_interval{1000};
  // Building a sandbox takes milliseconds; a host short of memory or CPU can stretch it to
  // seconds. Past this, the call gets a tool error and the half-built sandbox is removed.
  std::chrono::milliseconds start_timeout{10'000};
  // Under a memory limit (a container's, a unit's), this much of it is kept for the gateway:
  // the sandboxes together get the rest.
  std::uint64_t gateway_memory_reserve = 256ull << 20;
  // The limit gateway and sandboxes share, when the cgroup cannot show it (a limit set above a
  // container's cgroup namespace); 0: read from the cgroups.
  std::uint64_t memory_limit = 0;
  // The named weaker mode an operator may accept when cgroups are not writable: sandboxes then
  // run without memory/CPU/process limits and without metered spend (lifetime still applies).
  bool accept_no_cgroups = false;
  // Ready sandboxes built ahead of need (ready_pool.hpp); size 0: none.
  PoolConfig pool;
  // How long a sandbox's spare init (inside/supervisor.cpp) waits for the next call before it
  // is dropped: a conversation's calls come seconds apart, while an abandoned session's
  // sandbox would hold its spare until the idle sweep. 0: no spare (every call's init forked at
  // the call).
  std::chrono::milliseconds spare_init_idle{60'000};
  // The gateway CA's certificate, PEM (issue #44; empty: none): egress sandboxes trust it, with
  // the system's store, through a bundle in their root and the usual variables.
  std::string egress_ca_pem;

  bool operator==(const HostConfig&) const = default;
};

struct IsolationReport {
  bool user_namespaces = false;
  bool privileged = false;  // may map distinct host uids per sandbox
  bool seccomp = false;
  int landlock_abi = 0;                   // 0: unavailable (then that layer is absent)
  std::unique_ptr<CgroupLayout> cgroups;  // never null once assessed (assess_isolation)
  std::string mode;                       // "full", "no-cgroups" or "refused"
  std::string problem;                    // why execute is refused, when mode is "refused"
  bool usable() const { return mode != "refused"; }
  std::string to_text() const;
  // What the cgroup probe found (CgroupLayout::describe) and what all sandboxes share of the
  // memory limit above (0: none): for the layers above, which do not see the cgroup code.
  std::string cgroups_description() const;
  // What the cgroup probe did to reach the cgroups (a fresh mount, a user namespace of its own).
  std::string cgroup_setup() const;
  std::uint64_t sandbox_memory_budget() const;
};

// Host uids below this belong to real accounts (system and login users, directory services).
constexpr std::uint32_t kMinHostUidBase = 100'000;

// "" when `base` may be the sandboxes' first host uid, else why not. `uid_map` is the gateway's
// /proc/self/uid_map: in the initial user namespace ("0 0 4294967295") the ids are the host's
// own and must stay clear of real accounts; inside a user namespace (a pod with hostUsers:
// false maps 65536 ids) they are the namespace's own and a low base is right.
std::string uid_base_problem(std::uint32_t base, const std::string& uid_map);

// "" unless /proc/sys/fs/suid_dumpable (`setting`) is 1. There a process that changes its uid
// becomes dumpable: between a program's uid change and its exec, the sandbox's other programs
// (same uid, same /proc) could write into it through /proc/PID/mem before seccomp and Landlock
// hold — and until its exec it shares its init's memory, which holds every capability of the
// sandbox. 0 (the default) and 2 keep such a process out of reach.
std::string suid_dumpable_problem(const std::string& setting);

// The sandboxes' first host id when the operator sets none: 1,000,000 on a host; inside a user
// namespace the first of 10000, the starts of the mapped ranges above it, or 1000 from which
// 2 * max_sandboxes ids are mapped in both maps — so one configuration serves a pod with
// hostUsers: true (host ids) and one with hostUsers: false (65536 ids of its own).
std::uint32_t automatic_uid_base(std::uint32_t max_sandboxes, const std::string& uid_map,
                                 const std::string& gid_map);

// Why a new sandbox needs room made for it.
enum class Pressure {
  sandbox_cap,    // every sandbox slot (--max-sandboxes) is taken
  memory_budget,  // the sandboxes use 90 % of the memory they share
};
const char* pressure_name(Pressure pressure);

// Asked to free one sandbox's worth of room (which sandbox goes, and whether it is hibernated or
// ended, belongs to whoever knows the sessions); true when it freed one.
using MakeRoom = std::function<boost::asio::awaitable<bool>(Pressure)>;

// Thrown when a sandbox cannot be created; what() is safe to show to the model.
class SandboxError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class SandboxHost {
 public:
  SandboxHost(boost::asio::any_io_executor executor, HostConfig config);
  ~SandboxHost();

  const IsolationReport& isolation() const { return report_; }
  const HostConfig& config() const { return config_; }

  // A sandbox with these limits: a ready one from the pool when one serves them (handed over:
  // its spend and lifetime start now), else one created and started now. Throws SandboxError.
  boost::asio::awaitable<std::shared_ptr<Sandbox>> create(Limits limits);
  // Creates a sandbox, runs `true` in bash, ends it: "" when that worked, else the reason.
  boost::asio::awaitable<std::string> self_test();

  // Asked, when every sandbox slot is taken or the shared memory budget is nearly used, to free
  // an idle sandbox before a new one is refused. Null: refuse at once.
  void set_make_room(MakeRoom make_room);
  // How often one create() asks for room at the memory budget before it refuses: freed memory
  // may not be enough.
  static constexpr int kMakeRoomAttempts = 4;
  // How long one create() keeps trying for a slot at the sandbox cap while room is being made
  // (by it or by other creates: another may take the slot it freed, and the idle sandboxes may
  // all be hibernating for others already). Refused at once when nothing is idle.
  static constexpr std::chrono::seconds kMakeRoomPatience{20};

  void shutdown();  // ends every live sandbox and stops the meter
  // Live sandboxes that belong to sessions or handles (the pool's ready ones are not counted).
  std::size_t live_count() const;
  // The environment layers (Limits::layer_dir) mounted by sandboxes that have not been
  // forgotten yet, the pool's included: a layer in this set is not removed.
  std::set<std::string> layers_in_use() const;
  PoolStats pool_stats() const { return pool_.stats(); }
  // Why the pool's last build failed ("" when none has); for the log, never the model.
  std::string pool_failure() const { return pool_.failure(); }
  // Told (on the host's executor) why a build of a ready sandbox failed: the pool then waits,
  // longer after each further failure (5 s doubling to 5 min).
  void set_pool_failure_hook(ReadyPool::FailureHook hook) {
    {
      std::lock_guard lock(mutex_);
      pool_failure_hook_ = hook;
    }
    pool_.set_failure_hook(std::move(hook));
  }
  // Ends the ready sandboxes and builds no more (a gateway shutting down: its slots and CPU go
  // to hibernating the sessions' sandboxes).
  void stop_pool();
  // The environments' pools, replacing the set in force: a layer's pool kept when its settings
  // are the same, started when new, stopped (its ready sandboxes ended) when gone or changed.
  void set_layer_pools(std::vector<LayerPool> pools);
  // The ready sandboxes of each environment's layer now, by layer directory.
  std::vector<std::pair<std::string, PoolStats>> layer_pool_stats() const;
  int swept_at_start() const { return swept_; }

 private:
  struct Slots;
  boost::asio::awaitable<void> meter_loop();
  std::vector<std::shared_ptr<Sandbox>> snapshot() const;
  bool memory_nearly_used() const;
  // Asks the make-room hook once; false when there is none or it freed nothing.
  boost::asio::awaitable<bool> make_room(Pressure pressure);
  // A free sandbox slot, made by hibernating (or ending) idle sandboxes at the cap; nullopt when
  // none is idle, or none came within kMakeRoomPatience.
  boost::asio::awaitable<std::optional<std::uint32_t>> take_slot();
  // Under the shared memory budget with room to spare, after idle sandboxes made room if they
  // had to; false when they could not.
  boost::asio::awaitable<bool> memory_room();
  // A sandbox built now, after room was made for it if it had to be. Throws SandboxError.
  boost::asio::awaitable<std::shared_ptr<Sandbox>> create_new(Limits limits);
  // Builds a sandbox in slot `slot` (released if it fails); `warming`: the pool's, adopted by
  // it under the lock that makes it live. Throws SandboxError.
  boost::asio::awaitable<std::shared_ptr<Sandbox>> build(Limits limits, std::uint32_t slot,
                                                         ReadyPool* warming = nullptr);

  // Whether building a ready sandbox now takes nothing real work may need: a slot to spare
  // beyond it, the memory budget well short of its limit, nobody making room.
  bool room_for_ready() const;
  // What the pool is given of this host (PoolHost).
  PoolHost pool_host();
  // Every pool: the host's own and the layers' (under mutex_ for the layers').
  std::vector<ReadyPool*> pools_locked() const;
  std::vector<ReadyPool*> pools() const;
  // Ends one ready sandbox of any pool; false when none has one.
  bool drop_one_ready();
  bool pool_build_pending() const;
  // The pool that serves `limits`' layer (the host's own for none); null when none does.
  ReadyPool* pool_for(const Limits& limits) const;

  boost::asio::any_io_executor executor_;
  HostConfig config_;
  IsolationReport report_;
  int swept_ = 0;
  std::shared_ptr<Slots> slots_;
  std::uint64_t next_id_ = 1;
  boost::asio::steady_timer meter_timer_;
  mutable std::mutex mutex_;
  std::vector<std::weak_ptr<Sandbox>> live_;
  bool stopped_ = false;
  MakeRoom make_room_;
  int making_room_ = 0;  // make-room hooks running now (under mutex_)
  // The ready sandboxes (each also in live_). Last: destroyed first, its refill timer with it.
  ReadyPool pool_;
  // The environments' pools (set_layer_pools), under mutex_. A pool taken out of service is
  // stopped and kept until the host goes: its refill loop may still be waking up.
  struct LayerPoolEntry {
    LayerPool config;
    std::shared_ptr<ReadyPool> pool;
  };
  std::vector<LayerPoolEntry> layer_pools_;
  std::vector<std::shared_ptr<ReadyPool>> retired_pools_;
  ReadyPool::FailureHook pool_failure_hook_;  // given to the layers' pools too (mutex_)
};

}  // namespace sandgate::sandbox
