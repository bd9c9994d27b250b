// What the OAuth resource server publishes and answers (server/mcp/resource_metadata): the
// protected resource metadata document, where it is served, and the Bearer challenges.
#include "server/mcp/resource_metadata.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "auth/oauth_config.hpp"

using namespace sandgate;
using namespace sandgate::auth;

TEST_CASE("the protected resource metadata and the Bearer challenges", "[unit][oauth]") {
  OAuthConfig config;
  config.resource_url = "https://sandgate.example.com/tools/mcp";
  config.issuers = {"https://idp.example.com"};
  config.scopes = {"sandgate:execute", "profile"};
  CHECK(server::resource_metadata_url(config.resource_url) ==
        "https://sandgate.example.com/.well-known/oauth-protected-resource/tools/mcp");
  CHECK(server::resource_metadata_paths(config.resource_url) ==
        std::vector<std::string>{"/.well-known/oauth-protected-resource/mcp",
                                 "/.well-known/oauth-protected-resource",
                                 "/.well-known/oauth-protected-resource/tools/mcp"});
  auto doc = nlohmann::json::parse(server::resource_metadata_document(config));
  CHECK(doc["resource"] == config.resource_url);
  CHECK(doc["authorization_servers"] == nlohmann::json::array({"https://idp.example.com"}));
  CHECK(doc["bearer_methods_supported"] == nlohmann::json::array({"header"}));
  CHECK_FALSE(doc.contains("resource_documentation"));

  server::AuthChallenge challenge(config);
  const std::string metadata =
      "resource_metadata=\"https://sandgate.example.com/.well-known/oauth-protected-resource/"
      "tools/mcp\"";
  CHECK(challenge.header() == "Bearer " + metadata + ", scope=\"sandgate:execute profile\"");
  // A description is quoted: its quotes and backslashes escaped, control characters dropped.
  CHECK(challenge.header("invalid_token", "say \"hi\"\\\n") ==
        "Bearer error=\"invalid_token\", error_description=\"say \\\"hi\\\"\\\\\", " + metadata +
            ", scope=\"sandgate:execute profile\"");
  CHECK(server::AuthChallenge().header() == "Bearer realm=\"sandgate\"");
}
