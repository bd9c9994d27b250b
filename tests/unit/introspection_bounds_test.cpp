// What bounds the introspection of opaque tokens, without a server: which tokens are worth a
// question at all, the gateway-wide rate and in-flight cap (on a clock the test moves), and the
// memory of judged tokens that evicts the least recently used instead of clearing itself.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "auth/introspection_gate.hpp"
#include "auth/opaque_token.hpp"
#include "auth/token_memory.hpp"

using namespace sandgate::auth;

TEST_CASE("only a plausible RFC 6750 b64token is worth a question", "[unit][oauth]") {
  for (const char* good : {"a", "opaque-good", "AbC019-._~+/", "abc==", "2YotnFZFEjr1zCsicMWpAA"})
    CHECK(plausible_opaque_token(good));
  for (const char* bad : {"", "=", "==abc", "a=b", "two words", " lead", "quote\"d", "semi;colon",
                          "comma,", "percent%41", "back\\slash", "tab\t", "\xc3\xa9t\xc3\xa9"})
    CHECK_FALSE(plausible_opaque_token(bad));
  CHECK(plausible_opaque_token(std::string(kMaxOpaqueTokenBytes, 'a')));
  CHECK_FALSE(plausible_opaque_token(std::string(kMaxOpaqueTokenBytes + 1, 'a')));
}

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

TEST_CASE("judged tokens are remembered until they expire, the least recently used evicted first",
          "[unit][oauth]") {
  using Clock = std::chrono::system_clock;
  const Clock::time_point now = Clock::now();
  const auto later = now + std::chrono::minutes(10);
  auto digest = [](int i) { return sha256("token-" + std::to_string(i)); };
  TokenMemory<std::string> memory(100);

  memory.remember(digest(0), "valid", later);
  REQUIRE(memory.find(digest(0), now) != nullptr);
  CHECK(*memory.find(digest(0), now) == "valid");
  // A flood of other tokens, with the valid one still in use among them: the memory stays
  // bounded, the oldest idle ones go, the one in use stays (it is never cleared whole).
  for (int i = 1; i <= 1000; ++i) {
    memory.remember(digest(i), "made-up", later);
    CHECK(memory.size() <= 100);
    if (i % 50 == 0) CHECK(memory.find(digest(0), now) != nullptr);
  }
  CHECK(memory.size() == 100);
  CHECK(memory.find(digest(0), now) != nullptr);
  CHECK(memory.find(digest(1000), now) != nullptr);
  CHECK(memory.find(digest(1), now) == nullptr);
  CHECK(memory.find(digest(900), now) == nullptr);

  // An entry stands until its expiry, no longer.
  memory.remember(digest(2000), "brief", now + std::chrono::seconds(60));
  CHECK(memory.find(digest(2000), now + std::chrono::seconds(59)) != nullptr);
  CHECK(memory.find(digest(2000), now + std::chrono::seconds(60)) == nullptr);
  // Remembered again: the new answer and expiry replace the old.
  memory.remember(digest(0), "again", now + std::chrono::seconds(1));
  CHECK(*memory.find(digest(0), now) == "again");
  CHECK(memory.find(digest(0), now + std::chrono::seconds(2)) == nullptr);
}
