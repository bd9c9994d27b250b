#include "server/gateway/gateway_tokens.hpp"

#include <algorithm>
#include <iterator>

#include "auth/token_file.hpp"
#include "common/logging.hpp"
#include "server/gateway/tenant_defaults.hpp"

namespace sandgate::server {
namespace {

auth::TokenStore load_tokens(const Config& config) {
  const auto defaults = tenant_defaults(config);
  if (config.auth.no_auth) return auth::TokenStore::anyone(defaults);
  if (config.auth.token_file.empty()) {
    // OAuth alone: a store that knows no token.
    if (config.auth.token.empty()) return auth::TokenStore::none();
    return auth::TokenStore::single(config.auth.token, defaults);
  }
  auto loaded = auth::load_token_file(config.auth.token_file, defaults);
  if (!loaded.warning.empty())
    log_event(LogLevel::warn, "tokens_file_exposed", {{"problem", loaded.warning}});
  return std::move(loaded.store);
}

// Sessions of tenants still in the file stay (they belong to tenant names, not tokens); new
// sessions get the new per-tenant limits. A file that cannot be used keeps the tokens in force.
// Error texts name lines, never what is written on them. Returns the tenants the file no longer
// names.
std::vector<std::string> reload_tokens(const Config& config, auth::TokenStore& tokens) {
  std::vector<std::string> removed;
  if (config.auth.token_file.empty()) return removed;
  try {
    auto loaded = auth::load_token_file(config.auth.token_file, tenant_defaults(config));
    if (!loaded.warning.empty())
      log_event(LogLevel::warn, "tokens_file_exposed", {{"problem", loaded.warning}});
    std::size_t count = loaded.store.size();
    const auto before = tokens.tenant_names(), after = loaded.store.tenant_names();
    std::set_difference(before.begin(), before.end(), after.begin(), after.end(),
                        std::back_inserter(removed));
    tokens.replace(std::move(loaded.store));
    log_event(LogLevel::info, "tokens_reloaded",
              {{"tokens", count}, {"tenants_removed", removed.size()}});
  } catch (const std::exception& e) {
    log_event(LogLevel::error, "tokens_reload_failed",
              {{"problem", e.what()}, {"kept_tokens", tokens.size()}});
  }
  return removed;
}

void reload_oauth_policy(const Config& config, auth::OAuthVerifier* oauth) {
  if (!oauth || config.auth.oauth.policy_file.empty()) return;
  try {
    auto policy = auth::OAuthPolicy::load(config.auth.oauth.policy_file, tenant_defaults(config));
    std::size_t overrides = policy.overrides();
    oauth->replace_policy(std::move(policy));
    log_event(LogLevel::info, "oauth_policy_reloaded", {{"tenants", overrides}});
  } catch (const std::exception& e) {
    log_event(LogLevel::error, "oauth_policy_reload_failed", {{"problem", e.what()}});
  }
}

}  // namespace

Credentials load_credentials(const Config& config, Metrics& metrics) {
  Credentials out;
  out.tokens = load_tokens(config);
  if (config.auth.oauth.enabled()) {
    out.oauth = std::make_unique<auth::OAuthVerifier>(
        config.auth.oauth, tenant_defaults(config),
        [&metrics](const std::string& issuer, bool ok, const std::string& problem,
                   std::size_t keys) {
          metrics.count_jwks_refresh(ok);
          if (ok)
            log_event(LogLevel::info, "oauth_keys_fetched", {{"issuer", issuer}, {"keys", keys}});
          else
            log_event(LogLevel::warn, "oauth_keys_fetch_failed",
                      {{"issuer", issuer}, {"problem", problem}, {"kept_keys", keys}});
        },
        [](const std::string& problem) {
          log_event(LogLevel::warn, "oauth_introspection_failed", {{"problem", problem}});
        });
  }
  return out;
}

std::vector<std::string> reload_credentials(const Config& config, Credentials& credentials) {
  if (config.auth.token_file.empty() && config.auth.oauth.policy_file.empty()) {
    log_event(LogLevel::warn, "tokens_reload_ignored",
              {{"reason",
                "SIGHUP reloads --token-file and --oauth-policy-file, and this gateway has "
                "neither"}});
    return {};
  }
  auto removed = reload_tokens(config, credentials.tokens);
  reload_oauth_policy(config, credentials.oauth.get());
  return removed;
}

// A tenant's terms now, by name, for sessions a restarted gateway serves again; null when the
// tenant is gone (from the tokens file, or an issuer no longer configured): its sessions are
// dropped.
tenant::Terms tenant_named(const Credentials& credentials, const std::string& name) {
  if (auto tenant = credentials.tokens.find_tenant(name)) return tenant;
  if (credentials.oauth) return credentials.oauth->tenant_named(name);
  return nullptr;
}

std::string spend_label(const Credentials& credentials, const std::string& name) {
  if (credentials.tokens.find_tenant(name)) return name;
  if (credentials.oauth && credentials.oauth->policy_names(name)) return name;
  return "other";
}

}  // namespace sandgate::server
