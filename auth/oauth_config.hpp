#pragma once
// OAuth 2.1 resource server settings (MCP authorization, RFC 9728/8707/9068): which issuers'
// access tokens are accepted, for which resource and scopes, and how a token's identity becomes
// a tenant. Empty `issuers`: no OAuth, the tokens file alone (the gateway as before).
#include <string>
#include <vector>

namespace sandgate::auth {

struct OAuthConfig {
  std::string resource_url;          // canonical URI of the MCP endpoint; the expected audience
  std::vector<std::string> issuers;  // exact `iss` values, each an authorization server
  std::vector<std::string> scopes;   // every one required of a token; also advertised
  std::string tenant_claim = "sub";
  std::string policy_file;        // per-tenant limits for OAuth tenants (oauth_policy.hpp)
  std::string introspection_url;  // RFC 7662, for tokens that are not JWTs
  std::string client_id;          // the gateway's credentials at the introspection endpoint
  std::string client_secret_file;
  unsigned introspection_rate = 20;  // questions a second to it, gateway-wide
  std::string ca_file;               // trust for the issuer's TLS instead of the system store
  std::string resource_name = "sandgate";
  std::string resource_documentation;

  bool enabled() const { return !issuers.empty(); }
  bool operator==(const OAuthConfig&) const = default;
};

}  // namespace sandgate::auth
