// The claims a resource server requires of a JWT access token (auth/access_token): this server's,
// current, granted the scopes, naming a tenant, of an access token's type.
#include "auth/access_token.hpp"

#include <catch2/catch.hpp>
#include <chrono>
#include <nlohmann/json.hpp>

using namespace sandgate::auth;
using nlohmann::json;

TEST_CASE("an access token must be this server's, current, granted the scopes and name a tenant",
          "[unit][auth][jwt]") {
  using namespace std::chrono;
  const auto now = system_clock::time_point(seconds(2'000'000'000));
  const long t = 2'000'000'000;
  AccessTokenRules rules;
  rules.issuers = {"https://issuer.test", "https://other-issuer.test"};
  rules.audience = "https://sandgate.test/mcp";
  rules.required_scopes = {"sandbox:execute"};
  json claims = {{"iss", "https://issuer.test"},
                 {"aud", "https://sandgate.test/mcp"},
                 {"sub", "alice"},
                 {"org", "acme"},
                 {"scope", "openid sandbox:execute"},
                 {"iat", t - 10},
                 {"exp", t + 300}};
  json header = {{"alg", "RS256"}, {"typ", "at+jwt"}};
  auto check = [&](const json& c, const json& h = json{{"typ", "at+jwt"}}) {
    return check_access_token(h, c, rules, now).fault;
  };
  auto with = [&](const char* name, json value) {
    json c = claims;
    if (value.is_null())
      c.erase(name);
    else
      c[name] = value;
    return c;
  };
  auto good = check_access_token(header, claims, rules, now);
  CHECK(good.fault == ClaimFault::none);
  CHECK(good.tenant == "alice");
  CHECK(good.expires == system_clock::time_point(seconds(t + 300)));

  CHECK(check(with("iss", "https://issuer.test/")) == ClaimFault::wrong_issuer);
  CHECK(check(with("iss", nullptr)) == ClaimFault::wrong_issuer);
  CHECK(check(with("iss", "https://other-issuer.test")) == ClaimFault::none);
  // Minted for another resource of the same issuer: never accepted here.
  CHECK(check(with("aud", "https://other.test/mcp")) == ClaimFault::wrong_audience);
  CHECK(check(with("aud", nullptr)) == ClaimFault::wrong_audience);
  CHECK(check(with("aud", json::array({"https://other.test", "https://sandgate.test/mcp"}))) ==
        ClaimFault::none);
  CHECK(check(with("aud", 5)) == ClaimFault::malformed);
  CHECK(check(with("exp", t - 61)) == ClaimFault::expired);
  CHECK(check(with("exp", t - 30)) == ClaimFault::none);  // within the skew
  CHECK(check(with("exp", nullptr)) == ClaimFault::expired);
  CHECK(check(with("exp", "tomorrow")) == ClaimFault::malformed);
  CHECK(check(with("exp", 1e300)) == ClaimFault::malformed);
  CHECK(check(with("nbf", t + 120)) == ClaimFault::not_yet_valid);
  CHECK(check(with("iat", t + 120)) == ClaimFault::not_yet_valid);
  CHECK(check(with("scope", "openid")) == ClaimFault::insufficient_scope);
  CHECK(check(with("scope", nullptr)) == ClaimFault::insufficient_scope);
  CHECK(check(with("scope", json::array({"sandbox:execute"}))) == ClaimFault::insufficient_scope);
  json scp = with("scope", nullptr);
  scp["scp"] = json::array({"sandbox:execute"});
  CHECK(check(scp) == ClaimFault::none);
  CHECK(check(with("sub", "")) == ClaimFault::no_tenant);
  CHECK(check(with("sub", 42)) == ClaimFault::no_tenant);
  // Types: an access token's, plain JWT, or none; never another kind of token.
  CHECK(check(claims, {{"typ", "JWT"}}) == ClaimFault::none);
  CHECK(check(claims, json::object()) == ClaimFault::none);
  CHECK(check(claims, {{"typ", "application/at+jwt"}}) == ClaimFault::none);
  CHECK(check(claims, {{"typ", "logout+jwt"}}) == ClaimFault::malformed);

  rules.tenant_claim = "org";
  CHECK(check_access_token(header, claims, rules, now).tenant == "acme");
}
