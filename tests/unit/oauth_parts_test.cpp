// The OAuth resource server's small parts, without a server: the URLs it accepts to fetch or
// name, where it looks for an issuer's metadata, tenant names and the policy file, and the
// challenges and metadata document it sends.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "auth/http_url.hpp"
#include "auth/issuer_keys.hpp"
#include "auth/oauth_policy.hpp"
#include "server/mcp/resource_metadata.hpp"

using namespace sandgate;
using namespace sandgate::auth;

TEST_CASE("the URLs the gateway fetches are https, or http on loopback, and nothing odd",
          "[unit][oauth]") {
  std::string problem;
  auto url = parse_http_url("https://idp.example.com:8443/realms/main?x=1", problem);
  REQUIRE(url);
  CHECK(url->host == "idp.example.com");
  CHECK(url->port == "8443");
  CHECK(url->target == "/realms/main?x=1");
  CHECK(url->path == "/realms/main");
  CHECK(url->origin() == "https://idp.example.com:8443");
  CHECK(parse_http_url("https://idp.example.com", problem)->target == "/");
  CHECK(parse_http_url("http://127.0.0.1:9000/", problem)->origin() == "http://127.0.0.1:9000");
  CHECK(parse_http_url("https://[::1]:8443/x", problem)->origin() == "https://[::1]:8443");
  for (const char* bad :
       {"http://idp.example.com/", "ftp://idp.example.com/", "https://user@idp.example.com/",
        "https://idp.example.com/#frag", "https://idp.example.com:0/",
        "https://idp.example.com:99999/", "https://[evil.example]/", "https://idp example.com/",
        "https:///path", "idp.example.com", "https://idp.example.com\\@evil.example/",
        "http://127.0.0.1.evil.example/"}) {
    INFO(bad);
    CHECK_FALSE(parse_http_url(bad, problem));
    CHECK_FALSE(problem.empty());
  }
}

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
