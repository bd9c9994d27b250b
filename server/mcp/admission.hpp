#pragma once
// The rules a request to /mcp passes before any protocol era looks at it: Origin and Host
// (DNS rebinding, 403), the token (401), the HTTP method (405); for a POST, Content-Type (415)
// and Accept (406). Each answers with its own status code.
#include <memory>
#include <optional>
#include <string_view>

#include "auth/token_store.hpp"
#include "server/http/http_types.hpp"
#include "server/mcp/mcp_config.hpp"
#include "server/metrics/metrics.hpp"

namespace sandgate::server {

class Admission {
 public:
  Admission(OriginPolicy origins, bool listening_on_loopback, const auth::TokenStore* tokens,
            Metrics& metrics)
      : origins_(std::move(origins)),
        listening_on_loopback_(listening_on_loopback),
        tokens_(tokens),
        metrics_(metrics) {}

  // Origin/Host, token, method, in that order, on the headers alone: a refusal, or nothing
  // with `tenant` set. Held by the caller for the whole request, so that a tokens reload
  // (SIGHUP) meanwhile does not free the tenant.
  std::optional<Reply> check_head(const Request& request,
                                  std::shared_ptr<const auth::Tenant>& tenant) const;
  // 415 for a POST whose body is not declared application/json.
  std::optional<Reply> check_content_type(const Request& request) const;
  // 406 for a 2025-era POST whose Accept does not list both response types.
  std::optional<Reply> check_accept(const Request& request) const;

  bool origin_allowed(std::string_view origin) const;
  bool host_allowed(std::string_view host) const;

 private:
  const OriginPolicy origins_;
  const bool listening_on_loopback_;
  const auth::TokenStore* tokens_;
  Metrics& metrics_;
};

}  // namespace sandgate::server
