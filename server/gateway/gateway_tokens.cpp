#include "server/gateway/gateway_tokens.hpp"

#include "auth/token_file.hpp"
#include "common/logging.hpp"
#include "server/tools/tenant_policy.hpp"

namespace sandgate::server {

std::optional<auth::TokenStore> load_tokens(const Config& config) {
  if (config.auth.no_auth) return std::nullopt;
  if (config.auth.token_file.empty()) return auth::TokenStore::single(config.auth.token);
  auto loaded = auth::load_token_file(config.auth.token_file);
  if (!loaded.warning.empty())
    log_event(LogLevel::warn, "tokens_file_exposed", {{"problem", loaded.warning}});
  return std::move(loaded.store);
}

// SIGHUP: the tokens file again, swapped in whole. Sessions stay (they belong to tenant names,
// not tokens); new sessions get the new per-tenant limits. A file that cannot be used keeps
// the tokens in force. Error texts name lines, never what is written on them.
void reload_tokens(const Config& config, auth::TokenStore* tokens) {
  if (!tokens || config.auth.token_file.empty()) {
    log_event(LogLevel::warn, "tokens_reload_ignored",
              {{"reason", "SIGHUP reloads --token-file, and this gateway has none"}});
    return;
  }
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

// A tenant's current policy by name, for sessions a restarted gateway serves again; nullopt
// when the tenant is gone from the tokens file (its sessions are dropped).
std::optional<session::TenantPolicy> tenant_policy(const Config& config,
                                                   const auth::TokenStore* tokens,
                                                   const std::string& name) {
  if (!tokens) {
    if (config.auth.no_auth && name == "anonymous") return session::TenantPolicy{.name = name};
    return std::nullopt;
  }
  auto tenant = tokens->find_tenant(name);
  if (!tenant) return std::nullopt;
  return policy_of(*tenant);
}

}  // namespace sandgate::server
