// JWT access tokens as a resource server checks them (auth/jwk_set, auth/jwt,
// auth/access_token): keys made here with OpenSSL, tokens signed here, and every hostile variant
// of the issue's list that does not need a server — none, HMAC with the public key, unknown and
// mismatched keys, tampering, wrong issuer or audience, times, scopes, types.
#include "auth/jwt.hpp"

#include <openssl/core_names.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rsa.h>

#include <catch2/catch.hpp>
#include <memory>
#include <string>

#include "auth/access_token.hpp"
#include "auth/jwk_set.hpp"
#include "common/base64.hpp"
#include "tests/support/jwt_signing.hpp"

using namespace sandgate::auth;
using namespace sandgate::test;
using nlohmann::json;
using sandgate::base64url_decode;
using sandgate::base64url_encode;

namespace {

JwkSet set_of(std::initializer_list<json> jwks) {
  std::string problem;
  auto set = parse_jwk_set(json{{"keys", json(jwks)}}.dump(), problem);
  REQUIRE(problem.empty());
  return set;
}

const json kClaims = {{"iss", "https://issuer.test"}, {"sub", "alice"}, {"exp", 4102444800}};

}  // namespace

TEST_CASE("base64url is strict: its own alphabet, no padding, one encoding per byte string",
          "[unit][auth][jwt]") {
  CHECK(base64url_encode("\xfb\xff") == "-_8");
  CHECK(base64url_decode("-_8") == std::string("\xfb\xff"));
  CHECK(base64url_decode("") == std::string());
  CHECK_FALSE(base64url_decode("+/8"));    // the standard alphabet's characters
  CHECK_FALSE(base64url_decode("-_8="));   // padding
  CHECK_FALSE(base64url_decode("-_9"));    // unused bits not 0
  CHECK_FALSE(base64url_decode("abcde"));  // a length no encoding has
  CHECK_FALSE(base64url_decode("ab c"));
}

TEST_CASE("a token signed with each allowed algorithm verifies against its issuer's key",
          "[unit][auth][jwt]") {
  auto rsa = rsa_key("r1");
  auto ec = ec_key("e1");
  auto ed = ed_key("d1");
  auto keys = set_of({rsa.jwk, ec.jwk, ed.jwk});
  REQUIRE(keys.keys.size() == 3);
  for (auto [alg, key] : {std::pair{"RS256", &rsa}, std::pair{"PS256", &rsa},
                          std::pair{"ES256", &ec}, std::pair{"EdDSA", &ed}}) {
    INFO(alg);
    auto verified = verify_jwt(signed_token(alg, *key, kClaims), keys);
    CHECK(verified.fault == JwtFault::none);
    CHECK(verified.claims == kClaims);
  }
  // Without a kid, the only key of the algorithm's type is the one.
  std::string input = signing_input({{"alg", "ES256"}}, kClaims);
  CHECK(
      verify_jwt(input + "." + base64url_encode(jws_signature("ES256", ec.key.get(), input)), keys)
          .fault == JwtFault::none);
}

TEST_CASE("a forged, tampered or unsigned token is refused", "[unit][auth][jwt]") {
  auto rsa = rsa_key("r1");
  auto keys = set_of({rsa.jwk});
  std::string good = signed_token("RS256", rsa, kClaims);
  REQUIRE(verify_jwt(good, keys).fault == JwtFault::none);

  SECTION("a payload changed after signing") {
    json claims = kClaims;
    claims["sub"] = "mallory";
    std::string forged = base64url_encode(json{{"alg", "RS256"}, {"kid", "r1"}}.dump()) + "." +
                         base64url_encode(claims.dump()) + good.substr(good.rfind('.'));
    CHECK(verify_jwt(forged, keys).fault == JwtFault::bad_signature);
  }
  SECTION("alg none, with or without a signature") {
    std::string input = signing_input({{"alg", "none"}, {"kid", "r1"}}, kClaims);
    CHECK(verify_jwt(input + ".", keys).fault == JwtFault::unsupported_alg);
    CHECK(verify_jwt(input + good.substr(good.rfind('.')), keys).fault ==
          JwtFault::unsupported_alg);
  }
  SECTION("HS256 keyed with the issuer's public key (algorithm confusion)") {
    std::string secret = *base64url_decode(rsa.jwk["n"].get<std::string>());
    std::string input = signing_input({{"alg", "HS256"}, {"kid", "r1"}}, kClaims);
    unsigned char mac[32];
    unsigned int length = 0;
    HMAC(EVP_sha256(), secret.data(), static_cast<int>(secret.size()),
         reinterpret_cast<const unsigned char*>(input.data()), input.size(), mac, &length);
    std::string hs =
        input + "." + base64url_encode(std::string(reinterpret_cast<char*>(mac), length));
    CHECK(verify_jwt(hs, keys).fault == JwtFault::unsupported_alg);
  }
  SECTION("another algorithm the list does not hold") {
    std::string input = signing_input({{"alg", "RS384"}, {"kid", "r1"}}, kClaims);
    CHECK(verify_jwt(input + good.substr(good.rfind('.')), keys).fault ==
          JwtFault::unsupported_alg);
  }
  SECTION("a signature by a key the issuer did not publish") {
    auto stranger = rsa_key("r1");  // same kid, another key
    CHECK(verify_jwt(signed_token("RS256", stranger, kClaims), keys).fault ==
          JwtFault::bad_signature);
  }
  SECTION("a header that brings its own key or key URL") {
    for (const char* own : {"jwk", "jku", "x5u", "x5c", "crit"}) {
      INFO(own);
      CHECK(verify_jwt(signed_token("RS256", rsa, kClaims, {{own, "x"}}), keys).fault ==
            JwtFault::malformed);
    }
  }
}

TEST_CASE("a token names a key the set has, of the type and algorithm that key is for",
          "[unit][auth][jwt]") {
  auto rsa = rsa_key("r1");
  auto ec = ec_key("e1");
  auto pss_only = rsa_key("p1");
  pss_only.jwk["alg"] = "PS256";
  auto keys = set_of({rsa.jwk, ec.jwk, pss_only.jwk});
  // An unknown kid: the caller may refetch the set (rotation) before refusing.
  CHECK(verify_jwt(signed_token("RS256", rsa, kClaims, {{"kid", "r9"}}), keys).fault ==
        JwtFault::unknown_key);
  // RS256 naming the EC key: never verified with a key of another type.
  CHECK(verify_jwt(signed_token("RS256", rsa, kClaims, {{"kid", "e1"}}), keys).fault ==
        JwtFault::key_mismatch);
  // A key published for PS256 is not used for RS256.
  CHECK(verify_jwt(signed_token("RS256", pss_only, kClaims), keys).fault == JwtFault::key_mismatch);
  CHECK(verify_jwt(signed_token("PS256", pss_only, kClaims), keys).fault == JwtFault::none);
  // No kid: the one RSA key not reserved for PS256 serves; beside a second one, no guessing.
  json header = {{"alg", "RS256"}};
  std::string input = signing_input(header, kClaims);
  std::string unnamed =
      input + "." + base64url_encode(jws_signature("RS256", rsa.key.get(), input));
  CHECK(verify_jwt(unnamed, keys).fault == JwtFault::none);
  CHECK(verify_jwt(unnamed, set_of({rsa.jwk, rsa_key("r2").jwk})).fault == JwtFault::key_mismatch);
  // A kid that is not a string.
  CHECK(verify_jwt(signed_token("RS256", rsa, kClaims, {{"kid", 7}}), keys).fault ==
        JwtFault::malformed);
}

TEST_CASE("a token that is not three base64url parts of JSON objects is malformed",
          "[unit][auth][jwt]") {
  auto rsa = rsa_key("r1");
  auto keys = set_of({rsa.jwk});
  std::string good = signed_token("RS256", rsa, kClaims);
  auto dot = good.find('.');
  for (const std::string& bad :
       {std::string(), std::string("abc"), good.substr(0, good.rfind('.')), good + ".x", "!" + good,
        good.substr(0, dot) + ".W10" + good.substr(good.rfind('.')),
        std::string(kMaxJwtBytes + 1, 'a')}) {
    CHECK(verify_jwt(bad, keys).fault == JwtFault::malformed);
  }
}

TEST_CASE("a JWK Set keeps only public signature keys of the kinds allowed", "[unit][auth][jwt]") {
  auto rsa = rsa_key("r1");
  auto small = rsa_key("small", 1024);
  auto p384 = ec_key("e384", "P-384");
  auto with_private = ec_key("priv");
  with_private.jwk["d"] = "AAAA";
  auto encryption = rsa_key("enc");
  encryption.jwk["use"] = "enc";
  json odd_curve = ec_key("odd").jwk;
  odd_curve["crv"] = 5;
  json exponent_one = rsa.jwk, exponent_even = rsa.jwk;
  exponent_one["e"] = "AQ";   // e = 1: every signature would "verify"
  exponent_even["e"] = "BA";  // e = 4
  auto keys = set_of({rsa.jwk, small.jwk, p384.jwk, with_private.jwk, encryption.jwk, odd_curve,
                      json("not a key"), json{{"kty", "oct"}, {"k", "c2VjcmV0"}}, exponent_one,
                      exponent_even});
  REQUIRE(keys.keys.size() == 1);
  CHECK(keys.keys[0].kid == "r1");
  CHECK(keys.skipped == 9);

  std::string problem;
  CHECK(parse_jwk_set("not json", problem).keys.empty());
  CHECK_FALSE(problem.empty());
  problem.clear();
  CHECK(parse_jwk_set(R"({"keys": {}})", problem).keys.empty());
  CHECK_FALSE(problem.empty());
  problem.clear();
  json many = {{"keys", json::array()}};
  for (std::size_t i = 0; i <= kMaxJwks; ++i) many["keys"].push_back(rsa.jwk);
  CHECK(parse_jwk_set(many.dump(), problem).keys.empty());
  CHECK_THAT(problem, Catch::Contains("more than"));
}

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
