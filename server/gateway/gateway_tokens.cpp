#include "server/gateway/gateway_tokens.hpp"

#include <algorithm>
#include <iterator>

#include "auth/token_file.hpp"
#include "common/logging.hpp"
#include "server/gateway/tenant_defaults.hpp"

namespace sandgate::server {
namespace {

// What every tenant starts from: the flags' defaults and the secrets its `secrets=` may name.
tenant::TenantTerms defaults_with(const Config& config,
                                  const std::shared_ptr<const secrets::SecretSet>& secrets) {
  tenant::TenantTerms defaults = tenant_defaults(config);
  defaults.secret_catalog = secrets;
  return defaults;
}

auth::TokenStore load_tokens(const Config& config,
                             const std::shared_ptr<const secrets::SecretSet>& secrets) {
  const auto defaults = defaults_with(config, secrets);
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
std::vector<std::string> reload_tokens(const Config& config, auth::TokenStore& tokens,
                                       const std::shared_ptr<const secrets::SecretSet>& secrets) {
  std::vector<std::string> removed;
  if (config.auth.token_file.empty()) return removed;
  try {
    auto loaded = auth::load_token_file(config.auth.token_file, defaults_with(config, secrets));
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

void reload_oauth_policy(const Config& config, auth::OAuthVerifier* oauth,
                         const std::shared_ptr<const secrets::SecretSet>& secrets) {
  if (!oauth || config.auth.oauth.policy_file.empty()) return;
  try {
    auto policy =
        auth::OAuthPolicy::load(config.auth.oauth.policy_file, defaults_with(config, secrets));
    std::size_t overrides = policy.overrides();
    oauth->replace_policy(std::move(policy));
    log_event(LogLevel::info, "oauth_policy_reloaded", {{"tenants", overrides}});
  } catch (const std::exception& e) {
    log_event(LogLevel::error, "oauth_policy_reload_failed", {{"problem", e.what()}});
  }
}

// A secrets file that cannot be used keeps the secrets in force (the tenants' terms, read
// against them, keep theirs too). The log names the file's problem (a line number and why),
// never a value.
void reload_secrets(const Config& config, std::shared_ptr<const secrets::SecretSet>& in_force) {
  if (config.secrets_file.empty()) return;
  try {
    auto loaded =
        std::make_shared<const secrets::SecretSet>(secrets::load_secrets_file(config.secrets_file));
    std::size_t count = loaded->size();
    in_force = std::move(loaded);
    log_event(LogLevel::info, "secrets_reloaded", {{"secrets", count}});
  } catch (const std::exception& e) {
    log_event(LogLevel::error, "secrets_reload_failed",
              {{"problem", e.what()}, {"kept_secrets", in_force ? in_force->size() : 0}});
  }
}

}  // namespace

Credentials load_credentials(const Config& config, Metrics& metrics) {
  Credentials out;
  if (!config.secrets_file.empty()) {
    out.secrets =
        std::make_shared<const secrets::SecretSet>(secrets::load_secrets_file(config.secrets_file));
    log_event(LogLevel::info, "secrets_loaded", {{"secrets", out.secrets->size()}});
  }
  out.tokens = load_tokens(config, out.secrets);
  if (config.auth.oauth.enabled()) {
    out.oauth = std::make_unique<auth::OAuthVerifier>(
        config.auth.oauth, defaults_with(config, out.secrets),
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
  if (config.auth.token_file.empty() && config.auth.oauth.policy_file.empty() &&
      config.secrets_file.empty()) {
    log_event(LogLevel::warn, "tokens_reload_ignored",
              {{"reason",
                "SIGHUP reloads --token-file, --oauth-policy-file and --secrets-file, and this "
                "gateway has none of them"}});
    return {};
  }
  reload_secrets(config, credentials.secrets);
  auto removed = reload_tokens(config, credentials.tokens, credentials.secrets);
  reload_oauth_policy(config, credentials.oauth.get(), credentials.secrets);
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

std::string tenant_naming_unknown(const Credentials& credentials,
                                  std::vector<std::string> tenant::TenantTerms::*names,
                                  const std::string& kind,
                                  const std::function<bool(const std::string&)>& defined,
                                  const std::string& where) {
  for (const auto& name : credentials.tokens.tenant_names()) {
    auto tenant = credentials.tokens.find_tenant(name);
    if (!tenant) continue;
    for (const auto& wanted : (*tenant).*names)
      if (!defined(wanted))
        return "tenant '" + name + "' names " + kind + " '" + wanted + "', which " + where;
  }
  return "";
}

}  // namespace sandgate::server
