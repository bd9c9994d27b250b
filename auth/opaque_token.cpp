#include "auth/opaque_token.hpp"

namespace sandgate::auth {

namespace {
bool is_b64token_char(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '.' || c == '_' || c == '~' || c == '+' || c == '/';
}
}  // namespace

bool plausible_opaque_token(std::string_view token) {
  if (token.empty() || token.size() > kMaxOpaqueTokenBytes) return false;
  std::size_t i = 0;
  while (i < token.size() && is_b64token_char(token[i])) ++i;
  if (i == 0) return false;  // "=" alone is padding with nothing before it
  while (i < token.size() && token[i] == '=') ++i;
  return i == token.size();
}

}  // namespace sandgate::auth
