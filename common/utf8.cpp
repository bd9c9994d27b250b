#include "common/utf8.hpp"

namespace sandgate {

namespace {
constexpr std::string_view kReplacement = "\xEF\xBF\xBD";

// Length of the valid sequence starting at s[i], or 0 when it is invalid there.
std::size_t valid_sequence_length(std::string_view s, std::size_t i) {
  auto byte = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
  unsigned char c = byte(i);
  if (c < 0x80) return 1;
  std::size_t need;
  unsigned char lo = 0x80, hi = 0xBF;  // allowed range of the second byte
  if (c >= 0xC2 && c <= 0xDF) {
    need = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    need = 3;
    if (c == 0xE0) lo = 0xA0;  // no overlong forms
    if (c == 0xED) hi = 0x9F;  // no surrogates
  } else if (c >= 0xF0 && c <= 0xF4) {
    need = 4;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;  // nothing above U+10FFFF
  } else {
    return 0;
  }
  if (i + need > s.size()) return 0;
  if (byte(i + 1) < lo || byte(i + 1) > hi) return 0;
  for (std::size_t k = 2; k < need; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) return 0;
  }
  return need;
}
}  // namespace

std::string sanitize_utf8(std::string_view bytes, bool* replaced) {
  std::string out;
  out.reserve(bytes.size());
  bool any = false;
  std::size_t i = 0;
  while (i < bytes.size()) {
    std::size_t n = valid_sequence_length(bytes, i);
    if (n > 0) {
      out.append(bytes.substr(i, n));
      i += n;
      continue;
    }
    any = true;
    out.append(kReplacement);
    // Skip the lead byte and any continuation bytes that followed it (one U+FFFD per run).
    ++i;
    while (i < bytes.size() && (static_cast<unsigned char>(bytes[i]) & 0xC0) == 0x80) ++i;
  }
  if (replaced) *replaced = any;
  return out;
}

bool is_valid_utf8(std::string_view bytes) {
  for (std::size_t i = 0; i < bytes.size();) {
    std::size_t n = valid_sequence_length(bytes, i);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

void make_valid_utf8(std::string& bytes, bool* replaced) {
  if (is_valid_utf8(bytes)) {
    if (replaced) *replaced = false;
    return;
  }
  bytes = sanitize_utf8(bytes, replaced);
}

}  // namespace sandgate
