#pragma once
// The gateway's credentials: the tokens file (--token-file, SANDGATE_TOKEN, or none with
// --no-auth) and, with --oauth-issuer, the OAuth verifier and its tenants' policy. Loaded at
// start, reloaded on SIGHUP, and a tenant's policy by name for sessions restored after a
// restart.
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "auth/oauth_verifier.hpp"
#include "auth/token_store.hpp"
#include "secrets/secrets_file.hpp"
#include "server/gateway/config.hpp"
#include "server/metrics/metrics.hpp"
#include "session/registry.hpp"

namespace sandgate::server {

struct Credentials {
  auth::TokenStore tokens = auth::TokenStore::none();  // with --no-auth, anyone()
  std::unique_ptr<auth::OAuthVerifier> oauth;          // null without --oauth-issuer
  // --secrets-file's secrets (issue #44); null without one. Tenants' `secrets=` name them.
  std::shared_ptr<const secrets::SecretSet> secrets;

  const auth::TokenStore* token_store() const { return &tokens; }
};

// Throws when the secrets file, the tokens file, the OAuth policy file or the OAuth CA file cannot
// be used.
Credentials load_credentials(const Config& config, Metrics& metrics);
// SIGHUP: the secrets file, then the tokens file and the OAuth policy file again (their
// `secrets=` read against the secrets now in force), each kept as it was if the new one cannot
// be used. Returns the tenants the new tokens file no longer names (revoked: the caller ends
// their sessions). A tenant removed from the OAuth policy is not revoked: its tokens come from
// the identity provider, and without a line of its own it gets the `*` defaults.
std::vector<std::string> reload_credentials(const Config& config, Credentials& credentials);
// A tenant's terms now, by name (a restarted gateway's saved sessions name tenants); null when
// it is gone.
tenant::Terms tenant_named(const Credentials& credentials, const std::string& name);
// The first tokens-file tenant whose list (`names`: its upstreams, its environments) holds a name
// `defined` does not know, as "tenant 'T' names KIND 'N', which WHERE"; "" when none does.
std::string tenant_naming_unknown(const Credentials& credentials,
                                  std::vector<std::string> tenant::TenantTerms::*names,
                                  const std::string& kind,
                                  const std::function<bool(const std::string&)>& defined,
                                  const std::string& where);
// The tenant's label on the spend metric: its name when the operator named it (a tokens-file
// line, an OAuth policy line of its own), else "other" — an issuer can mint tenants without end,
// a metric's labels must not grow with them.
std::string spend_label(const Credentials& credentials, const std::string& name);

}  // namespace sandgate::server
