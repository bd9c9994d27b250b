#pragma once
// Spend of one sandbox, from what it actually used: CPU time (cgroup counters) and memory held
// over time, at configured prices:
//   usd = cpu_seconds / 3600 * usd_per_vcpu_hour + gib_seconds / 3600 * usd_per_gib_hour
//         + egress_bytes / 2^30 * usd_per_egress_gib
// where gib_seconds sums, over the intervals between samples, the interval's length times the
// most memory held in it (the cgroup's watermark, reset per interval; without one, the larger
// of the two samples that bound it). A spike between two samples is charged, not missed.
#include <chrono>
#include <cstdint>

#include "limits.hpp"

namespace sandgate::sandbox {

class SpendMeter {
 public:
  using Clock = std::chrono::steady_clock;
  SpendMeter(Prices prices, Clock::time_point start) : prices_(prices), last_(start) {}

  // cpu_ns is the cgroup's cumulative CPU time; memory_bytes what it holds now; memory_peak the
  // most it held since the previous sample (0: unknown).
  void sample(std::uint64_t cpu_ns, std::uint64_t memory_bytes, std::uint64_t memory_peak,
              Clock::time_point now);
  double usd() const;
  // Counts from `now` on, as if made then: a ready sandbox's build is the operator's cost, not
  // the spend of the session it is handed to. `cpu_ns` is the cgroup's counter at that moment.
  void restart(std::uint64_t cpu_ns, std::uint64_t memory_bytes, Clock::time_point now);
  // Bytes the egress proxy relayed for the sandbox (both ways), charged at usd_per_egress_gib.
  void add_egress(std::uint64_t bytes) { egress_bytes_ += bytes; }
  std::uint64_t egress_bytes() const { return egress_bytes_; }
  // A price charged as it is (issue #45: an upstream's price per tool call).
  void add_charge(double usd) { charged_usd_ += usd; }
  double cpu_seconds() const { return static_cast<double>(cpu_ns_) / 1e9; }
  double gib_seconds() const { return gib_seconds_; }
  std::uint64_t memory_bytes() const { return last_memory_; }  // as the last sample saw it
  const Prices& prices() const { return prices_; }

 private:
  Prices prices_;
  Clock::time_point last_;
  std::uint64_t cpu_base_ns_ = 0;  // the cgroup's counter when counting started
  std::uint64_t cpu_ns_ = 0;
  std::uint64_t last_memory_ = 0;
  double gib_seconds_ = 0;
  std::uint64_t egress_bytes_ = 0;
  double charged_usd_ = 0;
};

}  // namespace sandgate::sandbox
