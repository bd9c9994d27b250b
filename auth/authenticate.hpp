#pragma once
// Who is calling: the token from `Authorization: Bearer <token>` or `X-MCP-AUTH: <token>`.
#include <string_view>

#include "token_store.hpp"

namespace sandgate::auth {

enum class AuthStatus { ok, missing, invalid };

struct AuthResult {
  AuthStatus status;
  const Tenant* tenant;  // set when ok
};

// `store` null means auth is off (--no-auth): everyone is the "anonymous" tenant.
AuthResult authenticate(const TokenStore* store, std::string_view authorization,
                        std::string_view x_mcp_auth);

}  // namespace sandgate::auth
