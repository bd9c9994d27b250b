#pragma once
// How the gateway authenticates requests: the auth layer's settings, with their defaults. The
// gateway's option table writes into it (server/gateway/config.cpp).
#include <string>

#include "auth/oauth_config.hpp"

namespace sandgate::auth {

struct AuthConfig {
  std::string token_file;  // one tenant per line (token_file.hpp); SIGHUP reloads it
  std::string token;       // SANDGATE_TOKEN only (a token on the command line shows in `ps`)
  bool no_auth = false;    // serve without tokens: refused unless listening on loopback
  OAuthConfig oauth;       // JWT access tokens from authorization servers, beside the file

  // Whether only one tenant can ever reach the gateway: --no-auth, or SANDGATE_TOKEN alone. A
  // tokens file may name many, and with an issuer every OAuth subject is a tenant of its own, so
  // either one makes the gateway's pools shared between tenants.
  bool single_tenant() const { return no_auth || (token_file.empty() && !oauth.enabled()); }

  bool operator==(const AuthConfig&) const = default;
};

}  // namespace sandgate::auth
