// The gateway-wide rate and in-flight cap on introspections (auth/introspection_gate), on a clock
// the test moves.
#include "auth/introspection_gate.hpp"

#include <catch2/catch.hpp>
#include <chrono>
#include <utility>
#include <vector>

using namespace sandgate::auth;

TEST_CASE("introspections are held to a rate and a number in flight, gateway-wide",
          "[unit][oauth]") {
  using Clock = IntrospectionGate::Clock;
  const Clock::time_point t0 = Clock::now();

  SECTION("a second's worth at once, then one per 1/rate s; the refused are told when") {
    IntrospectionGate gate(4, 100);
    for (int i = 0; i < 4; ++i) CHECK(gate.enter(t0).pass);
    auto refused = gate.enter(t0);
    CHECK_FALSE(refused.pass);
    CHECK_FALSE(refused.busy);
    CHECK(refused.retry_after == std::chrono::seconds(1));
    CHECK_FALSE(gate.enter(t0 + std::chrono::milliseconds(200)).pass);
    CHECK(gate.enter(t0 + std::chrono::milliseconds(260)).pass);
    CHECK_FALSE(gate.enter(t0 + std::chrono::milliseconds(270)).pass);
    // Idle for long: a second's worth again, never more.
    auto later = t0 + std::chrono::hours(1);
    for (int i = 0; i < 4; ++i) CHECK(gate.enter(later).pass);
    CHECK_FALSE(gate.enter(later).pass);
  }
  SECTION("a refusal spends nothing") {
    IntrospectionGate gate(1, 100);
    CHECK(gate.enter(t0).pass);
    for (int i = 0; i < 50; ++i) CHECK_FALSE(gate.enter(t0 + std::chrono::milliseconds(i)).pass);
    CHECK(gate.enter(t0 + std::chrono::milliseconds(1001)).pass);
  }
  SECTION("at most so many unanswered; an answer frees a place") {
    IntrospectionGate gate(1000, 2);
    std::vector<IntrospectionGate::Pass> held;
    held.push_back(std::move(*gate.enter(t0).pass));
    held.push_back(std::move(*gate.enter(t0).pass));
    auto refused = gate.enter(t0);
    CHECK_FALSE(refused.pass);
    CHECK(refused.busy);
    CHECK(refused.retry_after >= std::chrono::seconds(1));
    held.pop_back();
    CHECK(gate.enter(t0).pass);  // entered and given back at once
    CHECK(gate.enter(t0).pass);
  }
}
