// Session ids (session/session_id): unguessable, and the prefix logs name sessions by.
#include "session/session_id.hpp"

#include <array>
#include <catch2/catch.hpp>
#include <set>
#include <string>

TEST_CASE("session ids are unguessable: 128 random bits, never repeated", "[unit][registry]") {
  std::set<std::string> seen;
  std::array<int, 16> digit_counts{};
  for (int i = 0; i < 20000; ++i) {
    auto id = sandgate::session::new_session_id();
    REQUIRE(id.size() == 32);
    REQUIRE(sandgate::session::looks_like_session_id(id));
    for (char c : id) digit_counts[c <= '9' ? c - '0' : c - 'a' + 10]++;
    seen.insert(std::move(id));
  }
  CHECK(seen.size() == 20000);
  // 640,000 hex digits: each of the 16 values appears 40,000 times give or take a few hundred
  // (a broken generator — constant, counter, low entropy — is far outside this).
  for (int count : digit_counts) {
    CHECK(count > 38000);
    CHECK(count < 42000);
  }
}

TEST_CASE("the logged session prefix tells sessions apart, with or without a replica name",
          "[unit][registry]") {
  using sandgate::session::log_prefix;
  using sandgate::session::new_session_id;
  auto a = new_session_id("sandgate-0"), b = new_session_id("sandgate-0");
  CHECK(log_prefix(a).size() == 8);
  CHECK(log_prefix(a) == a.substr(std::string("sandgate-0.").size(), 8));
  CHECK(log_prefix(a) != log_prefix(b));
  auto plain = new_session_id();
  CHECK(log_prefix(plain) == plain.substr(0, 8));
}
