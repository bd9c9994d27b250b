#include "meter.hpp"

namespace sandgate::sandbox {

void SpendMeter::sample(std::uint64_t cpu_ns, std::uint64_t memory_bytes, Clock::time_point now) {
  if (cpu_ns > cpu_ns_) cpu_ns_ = cpu_ns;
  double seconds = std::chrono::duration<double>(now - last_).count();
  if (seconds > 0) {
    // Memory held since the last sample is charged at the level seen now (samples are ≤ 1 s
    // apart while anything runs, so the error is small and bounded by the interval).
    gib_seconds_ += static_cast<double>(memory_bytes) / double(1ull << 30) * seconds;
    last_ = now;
  }
}

double SpendMeter::usd() const {
  return cpu_seconds() / 3600.0 * prices_.usd_per_vcpu_hour +
         gib_seconds_ / 3600.0 * prices_.usd_per_gib_hour;
}

}  // namespace sandgate::sandbox
