#include "egress/proxy_request.hpp"

#include <cctype>
#include <charconv>

#include "egress/allow_list.hpp"

namespace sandgate::egress {
namespace {

bool iequals_prefix(std::string_view text, std::string_view prefix) {
  if (text.size() < prefix.size()) return false;
  for (std::size_t i = 0; i < prefix.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(text[i])) != prefix[i]) return false;
  return true;
}

// host[:port] or [v6][:port]: the host text and the port text ("" when absent).
bool split_authority(std::string_view authority, std::string_view& host, std::string_view& port) {
  if (authority.starts_with('[')) {
    auto close = authority.find(']');
    if (close == std::string_view::npos) return false;
    host = authority.substr(1, close - 1);
    auto rest = authority.substr(close + 1);
    if (!rest.empty() && !rest.starts_with(':')) return false;
    port = rest.empty() ? rest : rest.substr(1);
    return !port.empty() || rest.empty();
  }
  auto colon = authority.rfind(':');
  if (colon != std::string_view::npos && authority.find(':') != colon)
    return false;  // an unbracketed IPv6 literal: ambiguous with a port
  host = authority.substr(0, colon);
  port = colon == std::string_view::npos ? std::string_view() : authority.substr(colon + 1);
  return colon == std::string_view::npos || !port.empty();
}

bool parse_port(std::string_view text, std::uint16_t& port) {
  unsigned value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value == 0 || value > 65535)
    return false;
  port = static_cast<std::uint16_t>(value);
  return true;
}

std::string authority_of(const std::string& host, std::uint16_t port, bool with_port) {
  std::string text = host.find(':') != std::string::npos ? "[" + host + "]" : host;
  if (with_port) text += ":" + std::to_string(port);
  return text;
}

}  // namespace

std::variant<ProxyTarget, std::string> parse_proxy_target(bool connect, std::string_view target) {
  ProxyTarget out;
  out.tunnel = connect;
  std::string_view authority = target, rest;
  if (!connect) {
    if (iequals_prefix(target, "https://"))
      return std::string("an https URL must be fetched through CONNECT");
    if (!iequals_prefix(target, "http://"))
      return std::string("a proxy request needs an absolute http:// URL");
    authority = target.substr(7);
    auto end = authority.find_first_of("/?#");
    rest = end == std::string_view::npos ? std::string_view() : authority.substr(end);
    authority = authority.substr(0, end == std::string_view::npos ? authority.size() : end);
    if (rest.starts_with('#')) rest = {};
  }
  if (authority.find('@') != std::string_view::npos)
    return std::string("a URL with user information is not proxied");
  std::string_view host_text, port_text;
  if (!split_authority(authority, host_text, port_text)) return std::string("a malformed host");
  auto host = normalise_host(host_text);
  if (!host) return std::string("a malformed host");
  out.host = *host;
  if (port_text.empty()) {
    if (connect) return std::string("CONNECT needs host:port");
    out.port = 80;
  } else if (!parse_port(port_text, out.port)) {
    return std::string("a malformed port");
  }
  if (!connect) {
    out.origin_form = rest.empty() ? "/" : std::string(rest);
    if (out.origin_form.front() == '?') out.origin_form.insert(0, "/");
    out.authority = authority_of(out.host, out.port, !port_text.empty());
  } else {
    out.authority = authority_of(out.host, out.port, true);
  }
  return out;
}

}  // namespace sandgate::egress
