#pragma once
// Who is calling: the token from `Authorization: Bearer <token>` or `X-MCP-AUTH: <token>`.
#include <memory>
#include <string_view>

#include "token_store.hpp"

namespace sandgate::auth {

enum class AuthStatus { ok, missing, invalid };

struct AuthResult {
  AuthStatus status;
  // Set when ok. Shared, not borrowed: a tokens reload during the request leaves it valid.
  std::shared_ptr<const Tenant> tenant;
};

// The token of `Authorization: Bearer <token>` (the scheme in any case), or empty.
std::string_view bearer_token(std::string_view authorization);

// With auth off (TokenStore::anyone, --no-auth) everyone is the "anonymous" tenant.
AuthResult authenticate(const TokenStore& store, std::string_view authorization,
                        std::string_view x_mcp_auth);

}  // namespace sandgate::auth
