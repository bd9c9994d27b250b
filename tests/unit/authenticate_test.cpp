// Where a request's token comes from and what it is judged (auth/authenticate).
#include "auth/authenticate.hpp"

#include <catch2/catch.hpp>

using namespace sandgate::auth;

TEST_CASE("tokens come from Authorization: Bearer or X-MCP-AUTH", "[unit][auth]") {
  auto store = TokenStore::single("s3cret");
  CHECK(authenticate(store, "Bearer s3cret", "").status == AuthStatus::ok);
  CHECK(authenticate(store, "bearer s3cret", "").status == AuthStatus::ok);
  CHECK(authenticate(store, "", "s3cret").status == AuthStatus::ok);
  CHECK(authenticate(store, "", "").status == AuthStatus::missing);
  CHECK(authenticate(store, "Bearer wrong", "").status == AuthStatus::invalid);
  CHECK(authenticate(store, "Basic czNjcmV0", "").status == AuthStatus::invalid);
  CHECK(authenticate(store, "Bearer S3CRET", "").status == AuthStatus::invalid);
  // Auth off: everyone is "anonymous", with the gateway's defaults.
  Tenant defaults;
  defaults.max_sessions = 7;
  auto open = TokenStore::anyone(defaults);
  auto anyone = authenticate(open, "", "");
  CHECK(anyone.status == AuthStatus::ok);
  CHECK(anyone.tenant->name == "anonymous");
  CHECK(anyone.tenant->max_sessions == 7u);
  CHECK(open.find_tenant("anonymous") == anyone.tenant);
}
