#pragma once
// Limits for tenants that come from an authorization server, which knows nothing of them: a
// policy file of defaults and per-tenant overrides, with the fields of a tokens-file line.
//
//   # every OAuth tenant not named below
//   *                          max_sessions=20 spend_cap_usd=0.50
//   idp.example.com#org-42     max_sessions=500 max_sandboxes=16
//
// A tenant is named `<issuer without its scheme>#<claim value>` (oauth_tenant_name), so it can
// never be mistaken for a tokens-file tenant (whose names cannot hold '#'), nor for one of
// another issuer. In this file `#` starts a comment only at a line's start or after a space.
#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "auth/token_store.hpp"

namespace sandgate::auth {

// The longest claim value a tenant name takes; longer ones, and ones with characters other than
// printable ASCII (no space, quote or backslash), are refused: a tenant name goes into logs,
// metrics and saved sessions.
constexpr std::size_t kMaxTenantClaimBytes = 200;
bool is_usable_tenant_claim(std::string_view value);
std::string oauth_tenant_name(std::string_view issuer, std::string_view claim_value);

class OAuthPolicy {
 public:
  OAuthPolicy() = default;
  // Each line's tenant starts from `defaults` (the gateway's, from its flags), as does every
  // tenant when no line applies. Throws std::runtime_error naming the line that is wrong.
  static OAuthPolicy parse(std::string_view text, const Tenant& defaults = {});
  // "" : the server's defaults for all.
  static OAuthPolicy load(const std::string& path, const Tenant& defaults = {});

  // The tenant of this name with its limits: its own line, else the `*` line, else the
  // gateway's defaults.
  std::shared_ptr<const Tenant> tenant(const std::string& name) const;
  std::size_t overrides() const { return named_.size(); }
  // Whether the tenant has a line of its own (not only the `*` defaults).
  bool names(const std::string& name) const { return named_.count(name) > 0; }

 private:
  Tenant defaults_;  // the `*` line's
  std::map<std::string, Tenant, std::less<>> named_;
};

}  // namespace sandgate::auth
