#pragma once
// What the pool of ready sandboxes holds and did since the gateway started: one fact, filled by
// the pool (sandbox/ready_pool.hpp) and shown by /metrics (server/metrics), which knows nothing
// of sandbox/. A new statistic is a field here, the pool's line that counts it and the gauge
// that shows it; nothing copies it field by field in between.
#include <cstddef>
#include <cstdint>

namespace sandgate {

struct PoolStats {
  std::size_t target = 0;             // ready sandboxes the pool keeps (--pool-size); 0: no pool
  std::size_t ready = 0;              // ready sandboxes now
  std::uint64_t hits = 0;             // sandboxes handed out from the pool
  std::uint64_t misses = 0;           // sandboxes built on demand while the pool was on
  std::uint64_t refills = 0;          // ready sandboxes built
  std::uint64_t refill_failures = 0;  // builds that failed (the pool backs off, then retries)
  double refill_seconds_total = 0;    // time those builds took, together
};

}  // namespace sandgate
