#pragma once
// Standard base64 (RFC 4648, padded): what MCP's image data and blob resources carry, what a
// client sends for a binary file, and the `=?base64?…?=` form of 2026-07-28 header values.
#include <optional>
#include <string>
#include <string_view>

namespace sandgate {

std::string base64_encode(std::string_view bytes);
// Strict: the standard alphabet, padded to a multiple of 4, padding only at the end, the bits it
// leaves unused 0 (one encoding per byte string); nothing for anything else.
std::optional<std::string> base64_decode(std::string_view text);

// base64url without padding (RFC 7515 §2: JWS and JWK fields), as strictly: the URL-safe
// alphabet only, no '=', a length that is not 1 more than a multiple of 4, unused bits 0.
std::string base64url_encode(std::string_view bytes);
std::optional<std::string> base64url_decode(std::string_view text);

}  // namespace sandgate
