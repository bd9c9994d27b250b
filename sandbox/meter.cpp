#include "meter.hpp"

#include <algorithm>

namespace sandgate::sandbox {

void SpendMeter::sample(std::uint64_t cpu_ns, std::uint64_t memory_bytes, std::uint64_t memory_peak,
                        Clock::time_point now) {
  std::uint64_t used = cpu_ns > cpu_base_ns_ ? cpu_ns - cpu_base_ns_ : 0;
  if (used > cpu_ns_) cpu_ns_ = used;
  // The most held since the last sample: the watermark when known (it covers a spike that
  // came and went between samples), else the larger of the samples at both ends.
  std::uint64_t level = std::max(memory_peak, memory_bytes);
  if (memory_peak == 0) level = std::max(level, last_memory_);
  last_memory_ = memory_bytes;
  double seconds = std::chrono::duration<double>(now - last_).count();
  if (seconds > 0) {
    gib_seconds_ += static_cast<double>(level) / double(1ull << 30) * seconds;
    last_ = now;
  }
}

void SpendMeter::restart(std::uint64_t cpu_ns, std::uint64_t memory_bytes, Clock::time_point now) {
  cpu_base_ns_ = cpu_ns;
  cpu_ns_ = 0;
  gib_seconds_ = 0;
  egress_bytes_ = 0;
  charged_usd_ = 0;
  last_memory_ = memory_bytes;
  last_ = now;
}

double SpendMeter::usd() const {
  return cpu_seconds() / 3600.0 * prices_.usd_per_vcpu_hour +
         gib_seconds_ / 3600.0 * prices_.usd_per_gib_hour +
         static_cast<double>(egress_bytes_) / double(1ull << 30) * prices_.usd_per_egress_gib +
         charged_usd_;
}

}  // namespace sandgate::sandbox
