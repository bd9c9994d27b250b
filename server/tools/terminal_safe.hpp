#pragma once
// A program's output made safe to show as it is written (live output): nothing in it that a
// terminal or a chat UI would interpret rather than show. Input is valid UTF-8 (see
// sanitize_utf8 in common/utf8.hpp); so is the output.
#include <string>
#include <string_view>

namespace sandgate::server {

// C0 controls other than newline and tab become their visible Unicode Control Pictures
// (ESC → "␛", U+241B; DEL → "␡"), a carriage return a newline (a progress bar's "\r" redraws
// become lines; "\r\n" stays one newline), C1 controls (U+0080–U+009F) and the bidirectional
// overrides and isolates (U+202A–U+202E, U+2066–U+2069, which reorder what a UI shows) U+FFFD.
// `after_cr`: the previous text ended with a carriage return (so a leading "\n" is its pair);
// updated for the next piece.
std::string terminal_safe(std::string_view utf8, bool& after_cr);

}  // namespace sandgate::server
