#pragma once
// Warm starts: sandboxes built ahead of need, their Python interpreter started with the preload
// modules imported and Node started, so that a new session's or handle's first call (and a
// resume) skips building a sandbox and importing the data stack. Each one is handed to exactly
// one session or handle and never comes back; the host builds its replacement in the background.
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/pool_stats.hpp"
#include "limits.hpp"
#include "sandbox.hpp"

namespace sandgate::sandbox {

struct PoolConfig {
  std::uint32_t size = 0;            // ready sandboxes kept; 0: no pool
  std::vector<std::string> preload;  // Python modules each ready interpreter has imported
  // Above `size`, up to this many while sandboxes are taken: one more for each take (hit or
  // miss) in the last kDemandWindow, so a burst of new sessions finds more ready and an idle
  // pool shrinks back to `size`. 0 (or not above `size`): always `size`.
  std::uint32_t max_size = 0;

  bool operator==(const PoolConfig&) const = default;
};

// The real work the pool's refill stays out of the way of (ready_pool_refill.cpp): sessions'
// sandboxes built on demand now (pool misses), and when a session last took from the pool or
// finished such a build. Shared with the on-demand builds' guards: a create's coroutine frame may
// be destroyed after the host (with the io_context, at exit).
struct PoolDemand {
  std::mutex mutex;
  int building = 0;
  std::chrono::steady_clock::time_point last{};
};

class ReadyPool;

// What a ReadyPool needs of the host that owns it (host.hpp): slots, builds and room.
struct PoolHost {
  // A free sandbox slot; nullopt when none is.
  std::function<std::optional<std::uint32_t>()> take_slot;
  // A sandbox built with `limits` in `slot` (released if the build fails) and made live as
  // `pool`'s (ReadyPool::adopt). Throws on failure.
  std::function<boost::asio::awaitable<std::shared_ptr<Sandbox>>(Limits, std::uint32_t,
                                                                 ReadyPool& pool)>
      build;
  // Whether the host can spare what one more ready sandbox takes (host.hpp: room_for_ready).
  std::function<bool()> has_room;
};

// The pool of ready sandboxes: a background loop keeps `size` of them built and warm while
// the host has room to spare; take() hands one out when it serves the request; under pressure
// they (and the one being built) are the first to go. Lock order: the host's lock, then the
// pool's (the host calls adopt() and members() under its own); the pool calls its host
// without its lock held.
class ReadyPool {
 public:
  using FailureHook = std::function<void(const std::string&)>;

  // `demand`: shared by every pool of a host (each stays out of the way of all real work); null:
  // a demand of its own.
  ReadyPool(boost::asio::any_io_executor executor, PoolConfig config, Limits limits, PoolHost host,
            std::shared_ptr<PoolDemand> demand = nullptr);
  // How long a take counts towards the pool's size above PoolConfig::size.
  static constexpr std::chrono::seconds kDemandWindow{120};
  ReadyPool(const ReadyPool&) = delete;
  ReadyPool& operator=(const ReadyPool&) = delete;

  // Starts the refill loop on the executor.
  void start();
  // A ready sandbox that serves `limits`, handed over; null when none does.
  std::shared_ptr<Sandbox> take(const Limits& limits);
  // Ends one ready sandbox to free its slot and memory for real work; false when there is none.
  bool drop_one();
  // Whether a build for the pool holds a slot but is not yet a sandbox drop_one() can end.
  bool build_pending() const;
  // Called by the host, under its lock, as a sandbox built for the pool becomes live: true when
  // the pool takes it as the one warming now (false: the host or the pool has stopped).
  bool adopt(const std::shared_ptr<Sandbox>& sandbox, bool host_stopped);
  // The pool's sandboxes now: the ready ones and the one warming.
  std::vector<std::shared_ptr<Sandbox>> members() const;
  // What the refill stays out of the way of; on-demand builds count themselves in it.
  std::shared_ptr<PoolDemand> demand() const { return demand_; }

  // What the pool holds and did (common/pool_stats.hpp; /metrics shows it).
  PoolStats stats() const;
  // Why the last build failed ("" when none has); for the log, never the model.
  std::string failure() const;
  // Told (on the executor) why a build of a ready sandbox failed.
  void set_failure_hook(FailureHook hook);
  // Ends the ready sandboxes and builds no more.
  void stop();
  // The gateway shuts down: the refill loop ends. Returns the ready sandboxes, which are live
  // in the host too: the host ends them with every other.
  std::vector<std::shared_ptr<Sandbox>> shut_down();

 private:
  using Clock = std::chrono::steady_clock;
  // When the refill loop may build next.
  struct RefillSchedule;
  // How one refill ended. not_kept: it gave way to real work, or the pool stopped.
  enum class Refill { kept, failed, not_kept, shut_down };

  Limits ready_limits() const;
  // How many ready sandboxes to keep now (PoolConfig::size, more under recent demand); forgets
  // takes older than kDemandWindow. Under mutex_.
  std::size_t target_locked(Clock::time_point now);
  void wake_refill();
  boost::asio::awaitable<void> refill_loop();
  boost::asio::awaitable<void> wait_until(Clock::time_point when);
  // Forgets ready sandboxes that have ended; false once the gateway shuts down.
  bool forget_ended();
  // Whether building one more ready sandbox now takes nothing real work may need.
  bool room_for_another();
  std::optional<Clock::time_point> deferred_until(RefillSchedule& schedule,
                                                  Clock::time_point now) const;
  boost::asio::awaitable<Refill> refill_once();
  // A sandbox built and warmed for the pool; null when it could not be (the reason in `why`).
  boost::asio::awaitable<std::shared_ptr<Sandbox>> build_ready(std::string& why);
  // Starts the interpreters of `sandbox`: "" when they started, else why not.
  boost::asio::awaitable<std::string> warm(std::shared_ptr<Sandbox> sandbox);

  PoolConfig config_;
  Limits limits_;  // every sandbox's (HostConfig::limits)
  PoolHost host_;
  // What the refill waits for (ready_pool_refill.cpp: refill_loop).
  std::shared_ptr<PoolDemand> demand_;
  std::vector<Clock::time_point> recent_takes_;  // within kDemandWindow, oldest first (mutex_)
  mutable std::mutex mutex_;
  // Ready sandboxes (each also live in the host), oldest first, and the counters (mutex_).
  std::vector<std::shared_ptr<Sandbox>> ready_;
  std::shared_ptr<Sandbox> warming_;  // the one being built and warmed now, if any
  bool warming_gave_way_ = false;     // drop_one ended it: not a failure
  bool build_pending_ = false;        // a build for the pool holds a slot, not yet warming_
  bool stopped_ = false;              // stop(): no more ready sandboxes
  bool shut_down_ = false;            // shut_down(): the gateway is ending
  FailureHook failure_hook_;
  PoolStats stats_;
  std::string failure_;  // why the last failed build of a ready sandbox failed
  boost::asio::steady_timer refill_timer_;
};

// "" when `name` may be preloaded (a dotted Python module name), else why not. The names go
// into Python source, so nothing but identifiers and dots passes.
std::string preload_name_problem(std::string_view name);

// The Python cell a ready interpreter runs before it is handed out: imports `modules` into
// sys.modules (a module that is missing or fails is skipped) and leaves the cells' namespace
// as it found it. While they import, HOME and the cache variables point at a directory under
// /tmp, so what they cache (matplotlib's config and font list, fontconfig's cache through
// fc-list) stays out of the empty /work the sandbox is handed out with; the cell fails (and the
// sandbox is not used) if /work is not empty after it.
std::string preload_cell(const std::vector<std::string>& modules);

// Whether a sandbox built with `built` can serve a request for `wanted`: every limit its
// creation fixed (cgroups, mount sizes) is the same. The spend cap, lifetime and output limit
// are the gateway's and are given at hand-over (Sandbox::hand_over).
bool pool_serves(const Limits& built, const Limits& wanted);

}  // namespace sandgate::sandbox
