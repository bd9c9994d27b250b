// An issuer's keys (auth/issuer_keys), without a server: where its metadata is looked for.
#include "auth/issuer_keys.hpp"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

using namespace sandgate::auth;

TEST_CASE("an issuer's metadata is looked for where RFC 8414 and OpenID discovery put it",
          "[unit][oauth]") {
  CHECK(metadata_urls("https://idp.example.com") ==
        std::vector<std::string>{"https://idp.example.com/.well-known/oauth-authorization-server",
                                 "https://idp.example.com/.well-known/openid-configuration"});
  // The path goes after the well-known part, without the issuer's terminating slash.
  CHECK(metadata_urls("https://idp.example.com/realms/main/") ==
        std::vector<std::string>{
            "https://idp.example.com/.well-known/oauth-authorization-server/realms/main",
            "https://idp.example.com/.well-known/openid-configuration/realms/main",
            "https://idp.example.com/realms/main/.well-known/openid-configuration"});
}
