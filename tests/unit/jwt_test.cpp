// A JWT's signature and form (auth/jwt): keys made here with OpenSSL, tokens signed here, and
// every hostile variant of the list that does not need a server — none, HMAC with the
// public key, unknown and mismatched keys, tampering. The claims: access_token_test.cpp.
#include "auth/jwt.hpp"

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <catch2/catch.hpp>
#include <memory>
#include <string>

#include "auth/jwk_set.hpp"
#include "common/base64.hpp"
#include "tests/support/jwt_signing.hpp"
#include "tests/unit/jwk_set_of.hpp"

using namespace sandgate::auth;
using namespace sandgate::test;
using nlohmann::json;
using sandgate::base64url_decode;
using sandgate::base64url_encode;

namespace {

const json kClaims = {{"iss", "https://issuer.test"}, {"sub", "alice"}, {"exp", 4102444800}};

}  // namespace

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
