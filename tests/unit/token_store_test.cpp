// Tenants and their tokens (auth/token_store): the tokens file's text, the constant-time lookup
// of a presented token, and the store replaced whole on a reload.
#include "auth/token_store.hpp"

#include <atomic>
#include <catch2/catch.hpp>
#include <random>
#include <string>
#include <thread>

using namespace sandgate::auth;

TEST_CASE("a tokens file maps token digests to tenants", "[unit][auth]") {
  std::string acme = to_hex(sha256("acme-token"));
  std::string beta = to_hex(sha256("beta-token"));
  auto store = TokenStore::parse("# tenants\n" + acme +
                                 " acme max_sessions=5 spend_cap_usd=2.5\n\n" + beta + " beta\n");
  REQUIRE(store.size() == 2);
  auto a = store.find("acme-token");
  REQUIRE(a);
  CHECK(a->name == "acme");
  CHECK(a->max_sessions == 5u);
  CHECK(a->spend_cap_usd == Approx(2.5));
  CHECK(store.find("beta-token")->name == "beta");
  CHECK(store.find("acme-token ") == nullptr);
  CHECK(store.find("") == nullptr);
  CHECK(store.find(acme) == nullptr);  // the digest itself is not a token
}

TEST_CASE("a bad tokens file names the line", "[unit][auth]") {
  CHECK_THROWS_WITH(TokenStore::parse("nothex tenant\n"), Catch::Contains("line 1"));
  std::string d = to_hex(sha256("x"));
  CHECK_THROWS_WITH(TokenStore::parse("\n" + d + "\n"), Catch::Contains("line 2"));
  CHECK_THROWS_WITH(TokenStore::parse(d + " t max_sessions=-1\n"), Catch::Contains("bad option"));
  CHECK_THROWS_WITH(TokenStore::parse(d + " t colour=blue\n"), Catch::Contains("bad option"));
  CHECK_THROWS(TokenStore::parse("# only comments\n"));
  // Found by reading the parser for the fuzz target: values that used to be accepted silently.
  CHECK_THROWS_WITH(TokenStore::parse(d + " t max_sessions=4294967296\n"),
                    Catch::Contains("bad option"));
  CHECK_THROWS_WITH(TokenStore::parse(d + " t spend_cap_usd=inf\n"), Catch::Contains("bad option"));
  // Issue #41: a name the saved registry would drop is refused where it is made.
  CHECK_THROWS_WITH(TokenStore::parse(d + " " + std::string(257, 't') + "\n"),
                    Catch::Contains("longer than 256 bytes"));
  CHECK(
      TokenStore::parse(d + " " + std::string(256, 't') + "\n").find_tenant(std::string(256, 't')));
  CHECK_THROWS_WITH(TokenStore::parse(d + " a\n" + d + " b\n"),
                    Catch::Contains("line 2") && Catch::Contains("already listed"));
}

TEST_CASE("no wrong token is accepted over many tries", "[unit][auth]") {
  const std::string real = "s3cret-Token_0123456789abcdef";
  auto store = TokenStore::single(real);
  std::mt19937 random(7);
  int accepted = 0;
  auto check = [&](const std::string& t) { accepted += store.find(t) ? 1 : 0; };
  // Near misses: every prefix, every one-character change, case changes, padding.
  for (std::size_t n = 0; n < real.size(); ++n) check(real.substr(0, n));
  for (std::size_t i = 0; i < real.size(); ++i)
    for (int delta : {1, -1, 32}) {
      std::string t = real;
      t[i] = static_cast<char>(t[i] ^ delta);
      if (t != real) check(t);
    }
  check(real + " ");
  check(" " + real);
  check(real + real);
  check(to_hex(sha256(real)));
  // And 100,000 random tokens of every length up to 128 bytes, any byte values.
  for (int i = 0; i < 100000; ++i) {
    std::string t(std::uniform_int_distribution<int>(0, 128)(random), '\0');
    for (auto& c : t) c = static_cast<char>(std::uniform_int_distribution<int>(0, 255)(random));
    if (t != real) check(t);
  }
  CHECK(accepted == 0);
  CHECK(store.find(real) != nullptr);
}

TEST_CASE("replacing the tokens keeps tenants already handed out", "[unit][auth]") {
  auto store = TokenStore::parse(to_hex(sha256("old")) + " before max_sessions=1\n");
  auto held = store.find("old");
  REQUIRE(held);
  store.replace(TokenStore::parse(to_hex(sha256("new")) + " after\n"));
  CHECK(store.find("old") == nullptr);
  REQUIRE(store.find("new"));
  CHECK(store.find("new")->name == "after");
  // A request authenticated before the swap still has its tenant, intact.
  CHECK(held->name == "before");
  CHECK(held->max_sessions == 1u);
  CHECK(store.size() == 1);
}

TEST_CASE("lookups and replacements may run on different threads", "[unit][auth]") {
  // Run under ThreadSanitizer (scripts/test.sh tsan) this proves the swap is race-free; here it
  // proves that every lookup sees one whole table or the other.
  auto store = TokenStore::parse(to_hex(sha256("a")) + " one\n");
  std::atomic<bool> stop{false};
  std::atomic<int> torn{0};
  std::thread reader([&] {
    while (!stop) {
      auto a = store.find("a"), b = store.find("b");
      if (a && a->name != "one") ++torn;
      if (b && b->name != "two") ++torn;
    }
  });
  for (int i = 0; i < 2000; ++i)
    store.replace(
        TokenStore::parse(to_hex(sha256(i % 2 ? "a" : "b")) + (i % 2 ? " one\n" : " two\n")));
  stop = true;
  reader.join();
  CHECK(torn == 0);
}

// What a reload compares to find the tenants it revokes (server/gateway/gateway_tokens.cpp).
TEST_CASE("a store names each of its tenants once and in order", "[unit][auth]") {
  auto store = TokenStore::parse(to_hex(sha256("z1")) + " zeta\n" + to_hex(sha256("a1")) +
                                 " alpha\n" + to_hex(sha256("z2")) + " zeta\n");
  CHECK(store.tenant_names() == std::vector<std::string>{"alpha", "zeta"});
  CHECK(TokenStore::none().tenant_names().empty());
  CHECK(TokenStore::single("t").tenant_names() == std::vector<std::string>{"default"});
  CHECK(TokenStore::anyone().tenant_names() ==
        std::vector<std::string>{std::string(kAnonymousTenant)});
}
