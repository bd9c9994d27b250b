#pragma once
// Program output is arbitrary bytes; JSON strings must be valid UTF-8. Each invalid sequence is
// replaced by U+FFFD (the replacement character), following the Unicode "maximal subpart" rule.
#include <string>
#include <string_view>

namespace sandgate {

// Returns valid UTF-8; sets *replaced when anything was substituted.
std::string sanitize_utf8(std::string_view bytes, bool* replaced = nullptr);
// The same, in place: valid text (the usual case) is left as it is, without a copy.
void make_valid_utf8(std::string& bytes, bool* replaced = nullptr);
bool is_valid_utf8(std::string_view bytes);

}  // namespace sandgate
