#pragma once
// The rules a request to /mcp passes before any protocol era looks at it: Origin and Host
// (DNS rebinding, 403), the credentials (401, or 403 for an OAuth token without the scope
// needed), the HTTP method (405); for a POST, Content-Type (415) and Accept (406). Each answers
// with its own status code.
//
// Credentials: a token of the tokens file (`Authorization: Bearer` or `X-MCP-AUTH`), else, when
// OAuth is configured, a JWT access token in `Authorization: Bearer` (never elsewhere: RFC 6750's
// query and form parameters are refused, and X-MCP-AUTH carries tokens-file tokens only).
#include <boost/asio/awaitable.hpp>
#include <memory>
#include <optional>
#include <string_view>

#include "auth/oauth_verifier.hpp"
#include "auth/token_store.hpp"
#include "resource_metadata.hpp"
#include "server/http/http_types.hpp"
#include "server/mcp/mcp_config.hpp"
#include "server/metrics/metrics.hpp"

namespace sandgate::server {

class Admission {
 public:
  // `oauth` null: tokens-file tokens only.
  Admission(OriginPolicy origins, bool listening_on_loopback, const auth::TokenStore* tokens,
            auth::OAuthVerifier* oauth, Metrics& metrics);

  // Origin/Host, credentials, method, in that order, on the headers alone: a refusal, or
  // nothing with `tenant` set. Held by the caller for the whole request, so that a tokens
  // reload (SIGHUP) meanwhile does not free the tenant. Waits only when an OAuth issuer's keys
  // must be fetched first. `count_ok`: count an accepted credential in the metrics (the pass
  // that serves the request does; the one on the headers alone does not).
  boost::asio::awaitable<std::optional<Reply>> check_head(
      const Request& request, std::shared_ptr<const auth::Tenant>& tenant, bool count_ok) const;
  // 415 for a POST whose body is not declared application/json.
  std::optional<Reply> check_content_type(const Request& request) const;
  // 406 for a 2025-era POST whose Accept does not list both response types.
  std::optional<Reply> check_accept(const Request& request) const;

  bool origin_allowed(std::string_view origin) const;
  bool host_allowed(std::string_view host) const;

 private:
  std::optional<Reply> check_origin_and_host(const Request& request) const;
  boost::asio::awaitable<std::optional<Reply>> check_credentials(
      const Request& request, std::shared_ptr<const auth::Tenant>& tenant, bool count_ok) const;
  Reply unauthorized(const Request& request, const char* outcome, const char* error,
                     const std::string& description) const;
  std::optional<Reply> refuse_token_in_url(const Request& request) const;
  Reply refuse_oauth(const Request& request, const auth::OAuthCheck& check) const;

  const OriginPolicy origins_;
  const bool listening_on_loopback_;
  const auth::TokenStore* tokens_;
  auth::OAuthVerifier* oauth_;
  const AuthChallenge challenge_;
  Metrics& metrics_;
};

}  // namespace sandgate::server
