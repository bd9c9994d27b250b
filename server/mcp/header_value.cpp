#include "header_value.hpp"

namespace sandgate::server {
namespace {

int sextet(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  return -1;
}

// Strict RFC 4648 base64: padded to a multiple of 4, padding only at the end, unused bits 0.
std::optional<std::string> decode_base64(std::string_view text) {
  if (text.size() % 4 != 0) return std::nullopt;
  std::string out;
  out.reserve(text.size() / 4 * 3);
  for (std::size_t i = 0; i < text.size(); i += 4) {
    bool last = i + 4 == text.size();
    int pad = last ? (text[i + 3] == '=') + (text[i + 2] == '=' && text[i + 3] == '=') : 0;
    int v[4];
    for (int k = 0; k < 4 - pad; ++k)
      if ((v[k] = sextet(text[i + k])) < 0) return std::nullopt;
    if (pad == 2) {
      if (v[1] & 0x0f) return std::nullopt;
      out += static_cast<char>(v[0] << 2 | v[1] >> 4);
    } else if (pad == 1) {
      if (v[2] & 0x03) return std::nullopt;
      out += static_cast<char>(v[0] << 2 | v[1] >> 4);
      out += static_cast<char>((v[1] & 0x0f) << 4 | v[2] >> 2);
    } else {
      out += static_cast<char>(v[0] << 2 | v[1] >> 4);
      out += static_cast<char>((v[1] & 0x0f) << 4 | v[2] >> 2);
      out += static_cast<char>((v[2] & 0x03) << 6 | v[3]);
    }
  }
  return out;
}

}  // namespace

std::optional<std::string> decode_header_value(std::string_view header) {
  constexpr std::string_view open = "=?base64?", close = "?=";
  if (header.size() >= open.size() + close.size() && header.substr(0, open.size()) == open &&
      header.substr(header.size() - close.size()) == close)
    return decode_base64(header.substr(open.size(), header.size() - open.size() - close.size()));
  return std::string(header);
}

}  // namespace sandgate::server
