#pragma once
// Where a client's proxy request wants to go: the target of `CONNECT host:port` (a tunnel) or
// of `GET http://host[:port]/path` (plain HTTP, absolute form). Nothing else is proxied: an
// https:// URL in a plain request (TLS is the client's job, through CONNECT), a URL with user
// information, an origin-form target.
#include <cstdint>
#include <string>
#include <string_view>
#include <variant>

namespace sandgate::egress {

struct ProxyTarget {
  bool tunnel = false;     // CONNECT
  std::string host;        // normalised (allow_list.hpp: normalise_host)
  std::uint16_t port = 0;  // as given, or 80 for a plain URL without one
  // Plain HTTP: the path and query to send the destination ("/" when the URL had none), and
  // the Host header's value (host[:port], an IPv6 literal in brackets).
  std::string origin_form;
  std::string authority;
};

// The target, or why it cannot be proxied (a reason phrase for a 400).
std::variant<ProxyTarget, std::string> parse_proxy_target(bool connect, std::string_view target);

}  // namespace sandgate::egress
