// The OAuth resource server's options: names fixed by issue #27, so that operators' scripts
// and docs can rely on them.
#include <algorithm>
#include <stdexcept>

#include "auth/http_url.hpp"
#include "auth/oauth_policy.hpp"
#include "common/tenant_name.hpp"
#include "server/gateway/config_option.hpp"

namespace sandgate::server::options_detail {
namespace {

// A URL the gateway names or fetches: https, or http on loopback; refused at start otherwise.
std::string checked_url(const std::string& v) {
  std::string problem;
  if (!auth::parse_http_url(v, problem)) throw std::invalid_argument(problem);
  return v;
}

bool is_scope_char(char c) {
  // RFC 6749 §3.3 scope-token: printable ASCII but space, quote and backslash.
  return c > 0x20 && c < 0x7f && c != '"' && c != '\\';
}

std::vector<std::string> to_scopes(const std::string& v) {
  auto scopes = to_list(v);
  for (const auto& scope : scopes)
    if (!std::all_of(scope.begin(), scope.end(), is_scope_char))
      throw std::invalid_argument(
          "a scope is printable ASCII without spaces, quotes or "
          "backslashes");
  return scopes;
}

}  // namespace

std::vector<Option> oauth_options() {
  return {
      {"--oauth-issuer", "SANDGATE_OAUTH_ISSUER", "",
       "Accept OAuth access tokens (JWT, RFC 9068) of these authorization servers, beside the "
       "tokens file: comma-separated issuer URLs, each exactly as its tokens' `iss` (https; http "
       "only on loopback). Their keys come from the issuer's metadata (RFC 8414, else OpenID "
       "discovery). Needs --resource-url. Unset: tokens-file tokens only.",
       [](Config& c, const std::string& v) {
         c.auth.oauth.issuers.clear();
         for (const auto& issuer : to_list(v)) c.auth.oauth.issuers.push_back(checked_url(issuer));
       }},
      {"--resource-url", "SANDGATE_RESOURCE_URL", "",
       "The canonical URL clients reach the MCP endpoint at, e.g. "
       "https://sandgate.example.com/mcp: "
       "the audience an access token must name (RFC 8707; tokens for other services are "
       "refused) and the `resource` of the protected resource metadata served at "
       "/.well-known/oauth-protected-resource[/mcp].",
       [](Config& c, const std::string& v) { c.auth.oauth.resource_url = checked_url(v); }},
      {"--oauth-scopes", "SANDGATE_OAUTH_SCOPES", "",
       "Comma-separated scopes every access token must carry (in `scope` or `scp`); advertised in "
       "the metadata and in 401 challenges. A token without one gets 403 insufficient_scope.",
       [](Config& c, const std::string& v) { c.auth.oauth.scopes = to_scopes(v); }},
      {"--oauth-tenant-claim", "SANDGATE_OAUTH_TENANT_CLAIM", "sub",
       "The claim naming a token's tenant (e.g. an organisation claim for per-organisation "
       "quotas). The tenant is `<issuer without https://>#<claim value>`.",
       [](Config& c, const std::string& v) {
         if (v.empty()) throw std::invalid_argument("expected a claim name");
         c.auth.oauth.tenant_claim = v;
       }},
      {"--oauth-policy-file", "SANDGATE_OAUTH_POLICY_FILE", "",
       "Limits for OAuth tenants: lines of '<tenant> [max_sessions=N] [spend_cap_usd=X] "
       "[max_concurrent_calls=N] [max_sandboxes=N] [budget_usd_per_day=X] "
       "[budget_usd_per_month=X]', `*` for every tenant not named. SIGHUP "
       "reloads it. Unset: the server's defaults for all.",
       [](Config& c, const std::string& v) { c.auth.oauth.policy_file = v; }},
      {"--oauth-introspection-url", "SANDGATE_OAUTH_INTROSPECTION_URL", "",
       "RFC 7662 introspection endpoint for access tokens that are not JWTs (opaque tokens), "
       "asked as the client --oauth-client-id with the secret in --oauth-client-secret-file. "
       "An answer stands for 60 s, active or not. Only a plausible token is asked about (an RFC "
       "6750 b64token of at most 4096 bytes).",
       [](Config& c, const std::string& v) { c.auth.oauth.introspection_url = checked_url(v); }},
      {"--oauth-client-id", "SANDGATE_OAUTH_CLIENT_ID", "",
       "The gateway's client id at the introspection endpoint.",
       [](Config& c, const std::string& v) { c.auth.oauth.client_id = v; }},
      {"--oauth-client-secret-file", "SANDGATE_OAUTH_CLIENT_SECRET_FILE", "",
       "File holding the gateway's client secret for the introspection endpoint.",
       [](Config& c, const std::string& v) { c.auth.oauth.client_secret_file = v; }},
      {"--oauth-introspection-rate", "SANDGATE_OAUTH_INTROSPECTION_RATE", "20",
       "Questions a second the whole gateway may put to the introspection endpoint (as many at "
       "once, at most 8 unanswered). A token not judged yet beyond it gets 503 with Retry-After; "
       "tokens already judged are answered from memory, never held back.",
       [](Config& c, const std::string& v) {
         c.auth.oauth.introspection_rate = static_cast<unsigned>(to_u64(v, 1, 10000));
       }},
      {"--oauth-ca-file", "SANDGATE_OAUTH_CA_FILE", "",
       "PEM certificates to trust for the issuers' HTTPS instead of the system's store (a "
       "private CA).",
       [](Config& c, const std::string& v) { c.auth.oauth.ca_file = v; }},
      {"--resource-name", "SANDGATE_RESOURCE_NAME", "sandgate",
       "The `resource_name` of the protected resource metadata: what a client shows its user.",
       [](Config& c, const std::string& v) { c.auth.oauth.resource_name = v; }},
      {"--resource-documentation", "SANDGATE_RESOURCE_DOCUMENTATION", "",
       "A URL of documentation for people, published as `resource_documentation`.",
       [](Config& c, const std::string& v) {
         c.auth.oauth.resource_documentation = checked_url(v);
       }},
  };
}

std::string oauth_problem(const Config& c) {
  const auth::OAuthConfig& o = c.auth.oauth;
  if (!o.enabled()) {
    if (!o.resource_url.empty() || !o.scopes.empty() || !o.policy_file.empty() ||
        !o.introspection_url.empty() || !o.ca_file.empty())
      return "the --oauth-* options and --resource-url need --oauth-issuer";
    return "";
  }
  if (c.auth.no_auth) return "--no-auth and --oauth-issuer exclude each other";
  if (o.resource_url.empty())
    return "--oauth-issuer needs --resource-url (the URL clients reach /mcp at: the audience "
           "tokens must name)";
  if (o.resource_url.find('?') != std::string::npos) return "--resource-url must not hold a query";
  // Each issuer's tenants must be its own: two issuers that differ only in scheme or a
  // trailing slash would name the same tenants.
  for (std::size_t i = 0; i < o.issuers.size(); ++i)
    for (std::size_t j = 0; j < i; ++j)
      if (auth::oauth_tenant_name(o.issuers[i], "") == auth::oauth_tenant_name(o.issuers[j], ""))
        return "--oauth-issuer lists two issuers whose tenants would share names (they differ "
               "only in scheme or a trailing '/')";
  // Room for a claim in every tenant name (common/tenant_name.hpp): the longest claim a
  // tenant may have is the bound less this issuer's part.
  for (const auto& issuer : o.issuers)
    if (auth::oauth_tenant_name(issuer, "").size() + 32 > kMaxTenantNameBytes)
      return "--oauth-issuer " + issuer +
             " is too long: a tenant name (issuer without its "
             "scheme, '#', claim) is at most " +
             std::to_string(kMaxTenantNameBytes) + " bytes, and the claim needs room";
  if (!o.introspection_url.empty() && (o.client_id.empty() || o.client_secret_file.empty()))
    return "--oauth-introspection-url needs --oauth-client-id and --oauth-client-secret-file (the "
           "gateway's own credentials at the authorization server)";
  return "";
}

}  // namespace sandgate::server::options_detail
