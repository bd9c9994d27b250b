// An issuer's JWK Set (auth/jwk_set): only public signature keys of the kinds allowed are kept.
#include "auth/jwk_set.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <string>

#include "tests/support/jwt_signing.hpp"
#include "tests/unit/jwk_set_of.hpp"

using namespace sandgate::auth;
using namespace sandgate::test;
using nlohmann::json;

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
