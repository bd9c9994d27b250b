#pragma once
// Warm starts: sandboxes built ahead of need, their Python interpreter started with the preload
// modules imported and Node started, so that a new session's or handle's first call (and a
// resume) skips building a sandbox and importing the data stack. Each one is handed to exactly
// one session or handle and never comes back; the host builds its replacement in the background.
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "limits.hpp"

namespace sandgate::sandbox {

struct PoolConfig {
  std::uint32_t size = 0;            // ready sandboxes kept; 0: no pool
  std::vector<std::string> preload;  // Python modules each ready interpreter has imported

  bool operator==(const PoolConfig&) const = default;
};

// What the pool did since the gateway started (for /metrics).
struct PoolStats {
  std::size_t ready = 0;              // ready sandboxes now
  std::uint64_t hits = 0;             // sandboxes handed out from the pool
  std::uint64_t misses = 0;           // sandboxes built on demand while the pool was on
  std::uint64_t refills = 0;          // ready sandboxes built
  std::uint64_t refill_failures = 0;  // builds that failed (the pool backs off, then retries)
  double refill_seconds_total = 0;    // time those builds took, together
};

// The real work the pool's refill stays out of the way of (host_pool.cpp): sessions' sandboxes
// built on demand now (pool misses), and when a session last took from the pool or finished
// such a build. Shared with the on-demand builds' guards: a create's coroutine frame may be
// destroyed after the host (with the io_context, at exit).
struct PoolDemand {
  std::mutex mutex;
  int building = 0;
  std::chrono::steady_clock::time_point last{};
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
