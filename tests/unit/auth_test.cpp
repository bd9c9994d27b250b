#include <catch2/catch.hpp>
#include <random>

#include "auth/authenticate.hpp"

using namespace sandgate::auth;

TEST_CASE("a tokens file maps token digests to tenants", "[unit][auth]") {
  std::string acme = to_hex(sha256("acme-token"));
  std::string beta = to_hex(sha256("beta-token"));
  auto store = TokenStore::parse("# tenants\n" + acme +
                                 " acme max_sessions=5 spend_cap_usd=2.5\n\n" + beta + " beta\n");
  REQUIRE(store.size() == 2);
  const Tenant* a = store.find("acme-token");
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
  CHECK_THROWS_WITH(TokenStore::parse(d + " a\n" + d + " b\n"),
                    Catch::Contains("line 2") && Catch::Contains("already listed"));
}

TEST_CASE("tokens come from Authorization: Bearer or X-MCP-AUTH", "[unit][auth]") {
  auto store = TokenStore::single("s3cret");
  CHECK(authenticate(&store, "Bearer s3cret", "").status == AuthStatus::ok);
  CHECK(authenticate(&store, "bearer s3cret", "").status == AuthStatus::ok);
  CHECK(authenticate(&store, "", "s3cret").status == AuthStatus::ok);
  CHECK(authenticate(&store, "", "").status == AuthStatus::missing);
  CHECK(authenticate(&store, "Bearer wrong", "").status == AuthStatus::invalid);
  CHECK(authenticate(&store, "Basic czNjcmV0", "").status == AuthStatus::invalid);
  CHECK(authenticate(&store, "Bearer S3CRET", "").status == AuthStatus::invalid);
  CHECK(authenticate(nullptr, "", "").tenant->name == "anonymous");
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
