#include "terminal_safe.hpp"

namespace sandgate::server {

namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD

// U+2400 + c for a C0 control c, U+2421 for DEL: three bytes, E2 90 xx.
void append_picture(std::string& out, unsigned char c) {
  out += '\xE2';
  out += '\x90';
  out += static_cast<char>(c == 0x7F ? 0xA1 : 0x80 + c);
}

}  // namespace

std::string terminal_safe(std::string_view utf8, bool& after_cr) {
  std::string out;
  out.reserve(utf8.size());
  for (std::size_t i = 0; i < utf8.size(); ++i) {
    const auto c = static_cast<unsigned char>(utf8[i]);
    const bool was_cr = after_cr;
    after_cr = false;
    if (c == '\r') {
      out += '\n';
      after_cr = true;
    } else if (c == '\n') {
      if (!was_cr) out += '\n';
    } else if (c == '\t') {
      out += '\t';
    } else if (c < 0x20 || c == 0x7F) {
      append_picture(out, c);
    } else if (c == 0xC2 && i + 1 < utf8.size() &&
               static_cast<unsigned char>(utf8[i + 1]) >= 0x80 &&
               static_cast<unsigned char>(utf8[i + 1]) <= 0x9F) {
      out += kReplacement;  // a C1 control
      ++i;
    } else if (c == 0xE2 && i + 2 < utf8.size()) {
      const auto b1 = static_cast<unsigned char>(utf8[i + 1]);
      const auto b2 = static_cast<unsigned char>(utf8[i + 2]);
      const bool override_ = b1 == 0x80 && b2 >= 0xAA && b2 <= 0xAE;  // U+202A–U+202E
      const bool isolate = b1 == 0x81 && b2 >= 0xA6 && b2 <= 0xA9;    // U+2066–U+2069
      if (override_ || isolate) {
        out += kReplacement;
        i += 2;
      } else {
        out += static_cast<char>(c);
      }
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

}  // namespace sandgate::server
