#include <catch2/catch.hpp>

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
