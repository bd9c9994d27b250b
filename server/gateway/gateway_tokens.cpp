#include "server/gateway/gateway_tokens.hpp"

#include "auth/authenticate.hpp"
#include "auth/token_file.hpp"
#include "common/logging.hpp"
#include "server/tools/tenant_policy.hpp"

namespace sandgate::server {
namespace {

std::optional<auth::TokenStore> load_tokens(const Config& config) {
  if (config.auth.no_auth) return std::nullopt;
  if (config.auth.token_file.empty()) {
    // OAuth alone: a store that knows no token.
    if (config.auth.token.empty()) return auth::TokenStore::none();
    return auth::TokenStore::single(config.auth.token);
  }
  auto loaded = auth::load_token_file(config.auth.token_file);
  if (!loaded.warning.empty())
    log_event(LogLevel::warn, "tokens_file_exposed", {{"problem", loaded.warning}});
  return std::move(loaded.store);
}

// Sessions stay (they belong to tenant names, not tokens); new sessions get the new per-tenant
// limits. A file that cannot be used keeps the tokens in force. Error texts name lines, never
// what is written on them.
void reload_tokens(const Config& config, auth::TokenStore* tokens) {
  if (!tokens || config.auth.token_file.empty()) return;
  try {
    auto loaded = auth::load_token_file(config.auth.token_file);
    if (!loaded.warning.empty())
      log_event(LogLevel::warn, "tokens_file_exposed", {{"problem", loaded.warning}});
    std::size_t count = loaded.store.size();
    tokens->replace(std::move(loaded.store));
    log_event(LogLevel::info, "tokens_reloaded", {{"tokens", count}});
  } catch (const std::exception& e) {
    log_event(LogLevel::error, "tokens_reload_failed",
              {{"problem", e.what()}, {"kept_tokens", tokens->size()}});
  }
}

void reload_oauth_policy(const Config& config, auth::OAuthVerifier* oauth) {
  if (!oauth || config.auth.oauth.policy_file.empty()) return;
  try {
    auto policy = auth::OAuthPolicy::load(config.auth.oauth.policy_file);
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
        config.auth.oauth,
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

void reload_credentials(const Config& config, Credentials& credentials) {
  if (config.auth.token_file.empty() && config.auth.oauth.policy_file.empty()) {
    log_event(LogLevel::warn, "tokens_reload_ignored",
              {{"reason",
                "SIGHUP reloads --token-file and --oauth-policy-file, and this gateway has "
                "neither"}});
    return;
  }
  reload_tokens(config, credentials.tokens ? &*credentials.tokens : nullptr);
  reload_oauth_policy(config, credentials.oauth.get());
}

// A tenant's current policy by name, for sessions a restarted gateway serves again; nullopt
// when the tenant is gone (from the tokens file, or an issuer no longer configured): its
// sessions are dropped.
std::optional<session::TenantPolicy> tenant_policy(const Config& config,
                                                   const Credentials& credentials,
                                                   const std::string& name) {
  if (!credentials.tokens) {
    if (config.auth.no_auth && name == auth::kAnonymousTenant)
      return session::TenantPolicy{.name = name};
    return std::nullopt;
  }
  if (auto tenant = credentials.tokens->find_tenant(name)) return policy_of(*tenant);
  if (credentials.oauth)
    if (auto tenant = credentials.oauth->tenant_named(name)) return policy_of(*tenant);
  return std::nullopt;
}

ledger::Budget tenant_budget(const Config& config, const Credentials& credentials,
                             const std::string& name) {
  ledger::Budget budget = config.ledger.default_budget;
  std::shared_ptr<const auth::Tenant> tenant;
  if (credentials.tokens) tenant = credentials.tokens->find_tenant(name);
  if (!tenant && credentials.oauth) tenant = credentials.oauth->tenant_named(name);
  if (tenant) {
    if (tenant->budget_usd_per_day) budget.usd_per_day = tenant->budget_usd_per_day;
    if (tenant->budget_usd_per_month) budget.usd_per_month = tenant->budget_usd_per_month;
  }
  return budget;
}

std::string spend_label(const Credentials& credentials, const std::string& name) {
  if (credentials.tokens && credentials.tokens->find_tenant(name)) return name;
  if (credentials.oauth && credentials.oauth->policy_names(name)) return name;
  return "other";
}

}  // namespace sandgate::server
