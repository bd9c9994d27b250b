#pragma once
// Whether a bearer token that is not a JWT could be an authorization server's opaque token, and
// so is worth a question to its introspection endpoint: an RFC 6750 §2.1 b64token (letters,
// digits, "-._~+/", then only "="s) of a sane length. Anything else — an empty token (a
// wrong X-MCP-AUTH alone carries none), spaces, quotes, a megabyte — is refused at once,
// never sent on.
#include <cstddef>
#include <string_view>

namespace sandgate::auth {

// Longer than any authorization server's opaque tokens (they are handles: tens of bytes; the
// large tokens are JWTs, judged by signature).
constexpr std::size_t kMaxOpaqueTokenBytes = 4096;

bool plausible_opaque_token(std::string_view token);

}  // namespace sandgate::auth
