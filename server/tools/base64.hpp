#pragma once
// Standard base64 (RFC 4648, padded): what MCP's image data and blob resources carry, and what
// a client sends for a binary file.
#include <optional>
#include <string>
#include <string_view>

namespace sandgate::server {

std::string base64_encode(std::string_view bytes);
// Strict: the standard alphabet, padded to a multiple of 4; nothing for anything else.
std::optional<std::string> base64_decode(std::string_view text);

}  // namespace sandgate::server
