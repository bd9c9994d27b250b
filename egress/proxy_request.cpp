#include "egress/proxy_request.hpp"

#include <cctype>
#include <string>

#include "common/host_port.hpp"
#include "egress/allow_list.hpp"

namespace sandgate::egress {
namespace {

bool iequals_prefix(std::string_view text, std::string_view prefix) {
  if (text.size() < prefix.size()) return false;
  for (std::size_t i = 0; i < prefix.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(text[i])) != prefix[i]) return false;
  return true;
}

std::string authority_of(const std::string& host, std::uint16_t port, bool with_port) {
  std::string text = bracket_host(host);
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
  auto split = split_host_port(authority);
  auto* parts = std::get_if<HostPort>(&split);
  if (parts == nullptr) {
    // The reason phrases clients saw before the split was shared: "host:" is a malformed host.
    return std::string(std::get<HostPortError>(split) == HostPortError::bad_port
                           ? "a malformed port"
                           : "a malformed host");
  }
  auto host = normalise_host(parts->host);
  if (!host) return std::string("a malformed host");
  out.host = *host;
  if (!parts->port && connect) return std::string("CONNECT needs host:port");
  out.port = parts->port.value_or(80);
  if (!connect) {
    out.origin_form = rest.empty() ? "/" : std::string(rest);
    if (out.origin_form.front() == '?') out.origin_form.insert(0, "/");
    out.authority = authority_of(out.host, out.port, parts->port.has_value());
  } else {
    out.authority = authority_of(out.host, out.port, true);
  }
  return out;
}

}  // namespace sandgate::egress
