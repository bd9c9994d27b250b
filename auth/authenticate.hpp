#pragma once
// Who is calling: the token from `Authorization: Bearer <token>` or `X-MCP-AUTH: <token>`.
#include <memory>
#include <string_view>

#include "token_store.hpp"

namespace sandgate::auth {

// The one tenant of a gateway without auth (--no-auth): named here so that the gateway, serving a
// saved session again after a restart, recognises it by the same name it was made with.
inline constexpr std::string_view kAnonymousTenant = "anonymous";

enum class AuthStatus { ok, missing, invalid };

struct AuthResult {
  AuthStatus status;
  // Set when ok. Shared, not borrowed: a tokens reload during the request leaves it valid.
  std::shared_ptr<const Tenant> tenant;
};

// The token of `Authorization: Bearer <token>` (the scheme in any case), or empty.
std::string_view bearer_token(std::string_view authorization);

// `store` null means auth is off (--no-auth): everyone is kAnonymousTenant.
AuthResult authenticate(const TokenStore* store, std::string_view authorization,
                        std::string_view x_mcp_auth);

}  // namespace sandgate::auth
