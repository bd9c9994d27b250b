#include "media_type.hpp"

#include <boost/algorithm/string/predicate.hpp>

namespace sandgate::server {
namespace {

// tchar of RFC 9110 §5.6.2.
bool is_tchar(char c) {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) return true;
  return c != '\0' && std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

// Reads a token at `s`; empty when there is none.
std::string_view take_token(std::string_view& s) {
  std::size_t n = 0;
  while (n < s.size() && is_tchar(s[n])) ++n;
  auto token = s.substr(0, n);
  s.remove_prefix(n);
  return token;
}

void skip_ows(std::string_view& s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
}

// A quoted-string (with quoted-pairs) at `s`; false when it is malformed or unterminated.
bool take_quoted(std::string_view& s) {
  if (s.empty() || s.front() != '"') return false;
  for (std::size_t i = 1; i < s.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c == '"') {
      s.remove_prefix(i + 1);
      return true;
    }
    if (c == '\\') {
      if (++i == s.size()) return false;
      continue;
    }
    // qdtext: HTAB, SP, visible ASCII except '"' and '\', obs-text.
    if (c != '\t' && (c < 0x20 || c == 0x7f)) return false;
  }
  return false;
}

}  // namespace

bool is_json_content_type(std::string_view s) {
  skip_ows(s);
  auto type = take_token(s);
  if (s.empty() || s.front() != '/') return false;
  s.remove_prefix(1);
  auto subtype = take_token(s);
  if (!boost::algorithm::iequals(type, "application") ||
      !boost::algorithm::iequals(subtype, "json"))
    return false;
  for (;;) {
    skip_ows(s);
    if (s.empty()) return true;
    if (s.front() != ';') return false;  // a comma, a second type, stray bytes
    s.remove_prefix(1);
    skip_ows(s);
    if (s.empty() || s.front() == ';') continue;  // an empty parameter is allowed
    if (take_token(s).empty() || s.empty() || s.front() != '=') return false;
    s.remove_prefix(1);
    if (!s.empty() && s.front() == '"') {
      if (!take_quoted(s)) return false;
    } else if (take_token(s).empty()) {
      return false;
    }
  }
}

}  // namespace sandgate::server
