// The OAuth tenants (auth/oauth_policy): their names from issuer and claim, and the policy file
// that sets their limits.
#include "auth/oauth_policy.hpp"

#include <catch2/catch.hpp>
#include <string>

using namespace sandgate::auth;

TEST_CASE("OAuth tenants are named by issuer and claim, and the policy file sets their limits",
          "[unit][oauth]") {
  CHECK(oauth_tenant_name("https://idp.example.com/realms/main/", "u-1") ==
        "idp.example.com/realms/main#u-1");
  CHECK(is_usable_tenant_claim("auth0|5f3c"));
  CHECK(is_usable_tenant_claim("alice@example.com"));
  for (const char* bad : {"", "with space", "quote\"", "back\\slash", "caf\xc3\xa9", "tab\t"})
    CHECK_FALSE(is_usable_tenant_claim(bad));
  CHECK_FALSE(is_usable_tenant_claim(std::string(kMaxTenantClaimBytes + 1, 'a')));

  Tenant gateway_defaults;
  gateway_defaults.spend_cap_usd = 0.75;
  gateway_defaults.max_sessions = 7;
  auto policy = OAuthPolicy::parse(
      "# defaults\n*  max_sessions=2 spend_cap_usd=0.5\n"
      "idp.example.com#vip max_sessions=9 max_sandboxes=3   # a comment after a space\n",
      gateway_defaults);
  auto vip = policy.tenant("idp.example.com#vip");
  CHECK(vip->name == "idp.example.com#vip");
  CHECK(vip->max_sessions == 9u);
  CHECK(vip->max_sandboxes == 3u);
  // A named line starts from the gateway's defaults: it replaces the `*` line, it does not merge.
  CHECK(vip->spend_cap_usd == 0.75);
  auto someone = policy.tenant("idp.example.com#someone");
  CHECK(someone->max_sessions == 2u);
  CHECK(someone->spend_cap_usd == 0.5);
  // No policy file: every tenant has the gateway's defaults.
  CHECK(OAuthPolicy::parse("", gateway_defaults).tenant("x#y")->max_sessions == 7u);

  for (const char* bad :
       {"plain-name max_sessions=1\n", "*\n* max_sessions=1\n",
        "a#b max_sessions=1\na#b max_sessions=2\n", "a#b max_sessions=-1\n", "a#b unknown=1\n"}) {
    INFO(bad);
    CHECK_THROWS_WITH(OAuthPolicy::parse(bad), Catch::StartsWith("OAuth policy file line "));
  }
}
