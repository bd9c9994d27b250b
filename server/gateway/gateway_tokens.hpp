#pragma once
// The gateway's tokens: loaded at start (--token-file, SANDGATE_TOKEN or none with --no-auth),
// reloaded on SIGHUP, and a tenant's policy by name for sessions restored after a restart.
#include <optional>
#include <string>

#include "auth/token_store.hpp"
#include "server/gateway/config.hpp"
#include "session/registry.hpp"

namespace sandgate::server {

// Nothing with --no-auth; throws when the tokens file cannot be used.
std::optional<auth::TokenStore> load_tokens(const Config& config);
void reload_tokens(const Config& config, auth::TokenStore* tokens);
std::optional<session::TenantPolicy> tenant_policy(const Config& config,
                                                   const auth::TokenStore* tokens,
                                                   const std::string& name);

}  // namespace sandgate::server
