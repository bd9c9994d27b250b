// The memory of judged tokens (auth/token_memory.hpp): bounded, evicting the least recently used
// instead of clearing itself, each entry standing until its expiry.
#include "auth/token_memory.hpp"

#include <catch2/catch.hpp>
#include <chrono>
#include <string>

using namespace sandgate::auth;

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
