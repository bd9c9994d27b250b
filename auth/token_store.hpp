#pragma once
// Tenants and their tokens. Only SHA-256 digests of tokens are kept; a presented token is
// hashed and compared with every digest in constant time (CRYPTO_memcmp), so neither the
// token's length nor its prefix shows in the time a check takes.
//
// Tokens file: one tenant per line, "#" starts a comment:
//   <sha256 hex of the token> <tenant name> [max_sessions=N] [spend_cap_usd=X]
//   [max_concurrent_calls=N] [max_sandboxes=N] [budget_usd_per_day=X] [budget_usd_per_month=X]
//   [egress=host[:port],...] [egress_connections=N] [egress_mb_per_call=N]
//   [egress_mb_per_sandbox=N]
//
// The store is read by every request thread and replaced whole on SIGHUP (replace()): a
// lookup works on a snapshot, and the Tenant it returns keeps that snapshot alive, so a
// request authenticated just before a reload finishes with the tenant it was given.
#include <array>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tenant/tenant_terms.hpp"

namespace sandgate::auth {

using Digest = std::array<unsigned char, 32>;

// A tenant as the gateway applies it: the gateway's defaults (`defaults` below), then what its
// line says.
using Tenant = tenant::TenantTerms;

// The one tenant of a gateway without auth (--no-auth): named once, so that the gateway, serving
// a saved session again after a restart, recognises it by the same name it was made with.
inline constexpr std::string_view kAnonymousTenant = "anonymous";

Digest sha256(std::string_view data);
std::string to_hex(const Digest& digest);

class TokenStore {
 public:
  // Each tenant starts from `defaults` (the gateway's, from its flags); its line's options
  // change what they name. Throws std::runtime_error naming the line that is wrong.
  // Error texts name the line and what is wrong, never the file's words: a token pasted by
  // mistake must not reach a log.
  static TokenStore parse(std::string_view text, const Tenant& defaults = {});
  // One token for one tenant ("default"), e.g. from SANDGATE_TOKEN.
  static TokenStore single(std::string_view token, const Tenant& defaults = {},
                           std::string tenant = "default");
  // No token at all (OAuth access tokens only).
  static TokenStore none() { return TokenStore(); }
  // Auth off (--no-auth): every request is the tenant kAnonymousTenant, with `defaults`.
  static TokenStore anyone(const Tenant& defaults = {});

  // Whether auth is off (anyone()), and then the one tenant every request is.
  bool open() const { return anyone_ != nullptr; }
  const std::shared_ptr<const Tenant>& anonymous() const { return anyone_; }

  TokenStore(TokenStore&& other) noexcept;
  TokenStore& operator=(TokenStore&& other) noexcept;

  // The tenant whose token this is, or null; every entry is compared, whatever matches first.
  std::shared_ptr<const Tenant> find(std::string_view token) const;
  // The tenant of this name (a restarted gateway's saved sessions name tenants), or null.
  std::shared_ptr<const Tenant> find_tenant(std::string_view name) const;
  std::size_t size() const;
  // The names of the tenants that have a token now (sorted, each once).
  std::vector<std::string> tenant_names() const;
  // Every token and tenant at once from `fresh` (which is left empty), safe while other
  // threads call find().
  void replace(TokenStore&& fresh);

 private:
  struct Entry {
    Digest digest;
    Tenant tenant;
  };
  using Entries = std::vector<Entry>;
  TokenStore() = default;
  std::shared_ptr<const Entries> snapshot() const;

  mutable std::mutex mutex_;
  std::shared_ptr<const Entries> entries_ = std::make_shared<const Entries>();
  std::shared_ptr<const Tenant> anyone_;  // set when auth is off
};

}  // namespace sandgate::auth
