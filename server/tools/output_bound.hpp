#pragma once
// Bounds what a program's output costs in its response, whatever the bytes are. The sandbox
// caps stdout + stderr in raw bytes, but a CallToolResult carries them twice (structuredContent
// and its JSON text form) and escapes each control byte as \u00XX, then escapes that escape
// again: 1 MiB of \x01 became a 13.6 MB response.
#include <cstdint>
#include <string>

namespace sandgate::server {

// Response bytes one output byte costs: escaped in structuredContent, plus its escape escaped
// again in the text form. 2 for plain text, 5 for \n, \t…, 6 for '"' and '\', 13 for other
// control bytes.
std::size_t response_cost(unsigned char byte);

// Cuts stdout and stderr (at UTF-8 character boundaries) so that together they cost at most
// `budget` response bytes; each keeps at least half of the budget if it needs it. True when
// something was cut.
bool bound_response_output(std::string& stdout_text, std::string& stderr_text,
                           std::uint64_t budget);

// The budget for a call whose output cap is `output_max_bytes`: plain text up to the cap (2
// bytes each) always fits, and the whole response stays within about three times the cap.
constexpr std::uint64_t response_output_budget(std::uint64_t output_max_bytes) {
  return 3 * output_max_bytes;
}

}  // namespace sandgate::server
