#pragma once
// A JWK Set parsed from these JWKs, which must parse without a problem (jwt_test.cpp,
// jwk_set_test.cpp).
#include <catch2/catch.hpp>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <string>

#include "auth/jwk_set.hpp"

namespace sandgate::test {

inline auth::JwkSet set_of(std::initializer_list<nlohmann::json> jwks) {
  using nlohmann::json;
  std::string problem;
  auto set = auth::parse_jwk_set(json{{"keys", json(jwks)}}.dump(), problem);
  REQUIRE(problem.empty());
  return set;
}

}  // namespace sandgate::test
