#pragma once
// Values of the 2026-07-28 request headers that mirror the body (Mcp-Name, Mcp-Param-*): plain
// visible ASCII, or `=?base64?…?=` (standard alphabet, padded) for anything else. A value is
// decoded before it is compared with the body.
#include <optional>
#include <string>
#include <string_view>

namespace sandgate::server {

// The value a header stands for; nothing when its base64 form is malformed.
std::optional<std::string> decode_header_value(std::string_view header);

}  // namespace sandgate::server
