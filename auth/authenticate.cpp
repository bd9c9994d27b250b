#include "authenticate.hpp"

#include <strings.h>

#include <string>

namespace sandgate::auth {

namespace {
std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}
}  // namespace

std::string_view bearer_token(std::string_view authorization) {
  authorization = trim(authorization);
  // The scheme is case-insensitive (RFC 9110); the token is not.
  if (authorization.size() > 7 && ::strncasecmp(authorization.data(), "Bearer ", 7) == 0)
    return trim(authorization.substr(7));
  return {};
}

AuthResult authenticate(const TokenStore& store, std::string_view authorization,
                        std::string_view x_mcp_auth) {
  if (store.open()) return {AuthStatus::ok, store.anonymous()};
  std::string_view token;
  authorization = trim(authorization);
  // The scheme is case-insensitive (RFC 9110); the token is not.
  if (authorization.size() > 7 && ::strncasecmp(authorization.data(), "Bearer ", 7) == 0)
    token = trim(authorization.substr(7));
  else if (!x_mcp_auth.empty())
    token = trim(x_mcp_auth);
  else if (!authorization.empty())
    return {AuthStatus::invalid, nullptr};
  if (token.empty()) return {AuthStatus::missing, nullptr};
  auto tenant = store.find(token);
  if (!tenant) return {AuthStatus::invalid, nullptr};
  return {AuthStatus::ok, std::move(tenant)};
}

}  // namespace sandgate::auth
