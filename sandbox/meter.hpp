#pragma once
// Spend of one sandbox, from what it actually used: CPU time (cgroup counters) and memory held
// over time (sampled), at configured prices.
#include <chrono>
#include <cstdint>

#include "limits.hpp"

namespace sandgate::sandbox {

class SpendMeter {
 public:
  using Clock = std::chrono::steady_clock;
  SpendMeter(Prices prices, Clock::time_point start) : prices_(prices), last_(start) {}

  // cpu_ns is the cgroup's cumulative CPU time; memory_bytes what it holds now.
  void sample(std::uint64_t cpu_ns, std::uint64_t memory_bytes, Clock::time_point now);
  double usd() const;
  double cpu_seconds() const { return static_cast<double>(cpu_ns_) / 1e9; }
  double gib_seconds() const { return gib_seconds_; }

 private:
  Prices prices_;
  Clock::time_point last_;
  std::uint64_t cpu_ns_ = 0;
  double gib_seconds_ = 0;
};

}  // namespace sandgate::sandbox
