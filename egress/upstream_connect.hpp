#pragma once
// Opening the far side of a proxied connection: straight to the destination, at an address the
// gateway resolved itself and the tenant may reach (address_policy.hpp), or through the
// operator's upstream proxy (--egress-upstream-proxy), tunnelled there with CONNECT.
#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <cstdint>
#include <string>

#include "egress/allow_list.hpp"
#include "egress/proxy_config.hpp"

namespace sandgate::egress {

struct UpstreamRequest {
  std::string host;  // normalised; a name or an IP literal
  std::uint16_t port = 0;
  bool tunnel = false;    // CONNECT: an upstream proxy is asked for a tunnel too
  std::string authority;  // host:port as a CONNECT line writes it
};

struct UpstreamOpened {
  int status = 0;      // the HTTP status to refuse with, when not opened
  std::string reason;  // empty: `socket` is connected and ready for the request's bytes
};

// `abandoned` turns true when the connection is given up meanwhile (its deadline, its relay's
// stop): no further address is tried then.
boost::asio::awaitable<UpstreamOpened> open_upstream(boost::asio::ip::tcp::socket& socket,
                                                     const UpstreamRequest& want,
                                                     const AllowList& allowed,
                                                     const ProxyConfig& config,
                                                     const bool& abandoned);

// Whether `host` (normalised) is an IP literal.
bool is_ip_literal(const std::string& host);

}  // namespace sandgate::egress
