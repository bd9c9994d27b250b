// The spend formula: CPU time at the vCPU price, memory held over time at the GiB price, with
// memory between samples charged at the most held in the interval.
#include "sandbox/meter.hpp"

#include <catch2/catch.hpp>

using sandgate::sandbox::Prices;
using sandgate::sandbox::SpendMeter;
using namespace std::chrono_literals;

namespace {
constexpr std::uint64_t GiB = 1ull << 30;
}

TEST_CASE("memory between samples is charged at the interval's watermark", "[unit][spend]") {
  Prices prices{3600, 3600};  // $1 per vCPU-second, $1 per GiB-second
  auto t0 = SpendMeter::Clock::now();
  SpendMeter meter(prices, t0);
  // 2 s in which 1 GiB was held at some point, little at either end: charged 2 GiB-s.
  meter.sample(0, GiB / 16, GiB, t0 + 2s);
  CHECK(meter.gib_seconds() == Approx(2.0));
  // Without a watermark, the larger of the two samples bounding the interval.
  meter.sample(0, GiB / 2, 0, t0 + 3s);
  CHECK(meter.gib_seconds() == Approx(2.5));
  meter.sample(0, 0, 0, t0 + 4s);  // half a GiB at the start of this one
  CHECK(meter.gib_seconds() == Approx(3.0));
  // CPU is the cumulative counter, never going back.
  meter.sample(1'500'000'000, 0, 0, t0 + 4s);
  meter.sample(1'000'000'000, 0, 0, t0 + 4s);
  CHECK(meter.cpu_seconds() == Approx(1.5));
  CHECK(meter.usd() == Approx(4.5));
}

TEST_CASE("a restarted meter counts only what came after the restart", "[unit][spend][pool]") {
  Prices prices{3600, 3600};
  auto t0 = SpendMeter::Clock::now();
  SpendMeter meter(prices, t0);
  // A ready sandbox's build: 2 CPU-seconds and half a GiB for 10 s — the operator's.
  meter.sample(2'000'000'000, GiB / 2, 0, t0 + 10s);
  REQUIRE(meter.usd() == Approx(7.0));
  // Handed over at t0 + 10 s, its cgroup's counter at 2 s.
  meter.restart(2'000'000'000, GiB / 2, t0 + 10s);
  CHECK(meter.usd() == 0);
  CHECK(meter.cpu_seconds() == 0);
  meter.sample(2'500'000'000, GiB / 2, 0, t0 + 12s);
  CHECK(meter.cpu_seconds() == Approx(0.5));
  CHECK(meter.gib_seconds() == Approx(1.0));
  CHECK(meter.usd() == Approx(1.5));
}
