#include "egress/upstream_connect.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <vector>

#include "egress/address_policy.hpp"
#include "egress/name_lookup.hpp"

namespace sandgate::egress {
namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

namespace {

constexpr auto kTuple = asio::as_tuple(asio::use_awaitable);
// Addresses tried, in the resolver's order, before the connection is given up: a name cannot
// make the proxy try dozens of unanswered addresses one after another.
constexpr std::size_t kAddressesTried = 4;

// Connects to the first of `endpoints` that answers; false when none did, or when the connection
// was abandoned meanwhile (its deadline passed, its relay stopped: the socket was closed under
// the attempt, and a next attempt would open it again with no deadline left to stop it).
asio::awaitable<bool> connect_any(tcp::socket& socket, const std::vector<tcp::endpoint>& endpoints,
                                  const bool& abandoned) {
  for (std::size_t i = 0; i < endpoints.size() && i < kAddressesTried && !abandoned; ++i) {
    boost::system::error_code ignored;
    socket.close(ignored);
    auto connected = co_await socket.async_connect(endpoints[i], kTuple);
    if (abandoned) break;
    if (!std::get<0>(connected)) co_return true;
  }
  boost::system::error_code ignored;
  socket.close(ignored);
  co_return false;
}

// The upstream proxy's endpoints: its literal address, or what its name resolves to (the
// operator's choice, not checked).
asio::awaitable<std::vector<tcp::endpoint>> upstream_endpoints(const UpstreamProxy& upstream) {
  std::vector<tcp::endpoint> endpoints;
  if (is_ip_literal(upstream.host)) {
    endpoints.emplace_back(asio::ip::make_address(upstream.host), upstream.port);
    co_return endpoints;
  }
  auto addresses = co_await look_up(upstream.host);
  for (const auto& address : addresses) endpoints.emplace_back(unmapped(address), upstream.port);
  co_return endpoints;
}

// Asks the upstream proxy for a tunnel to `authority`; "" when it said 2xx.
asio::awaitable<std::string> upstream_tunnel(tcp::socket& socket, const std::string& authority) {
  std::string ask = "CONNECT " + authority + " HTTP/1.1\r\nHost: " + authority + "\r\n\r\n";
  auto wrote = co_await asio::async_write(socket, asio::buffer(ask), kTuple);
  if (std::get<0>(wrote)) co_return "the upstream proxy closed the connection";
  beast::flat_buffer buffer;
  http::response_parser<http::empty_body> parser;
  parser.skip(true);  // a tunnel's 2xx has no body: what follows is the destination's
  parser.header_limit(16 * 1024);
  auto read = co_await http::async_read_header(socket, buffer, parser, kTuple);
  if (std::get<0>(read)) co_return "the upstream proxy did not answer the tunnel request";
  unsigned status = parser.get().result_int();
  if (status < 200 || status > 299)
    co_return "the upstream proxy refused the tunnel (status " + std::to_string(status) + ")";
  if (buffer.size() != 0) co_return "the upstream proxy sent bytes before the tunnel's";
  co_return "";
}

}  // namespace

bool is_ip_literal(const std::string& host) {
  boost::system::error_code ec;
  asio::ip::make_address(host, ec);
  return !ec;
}

asio::awaitable<UpstreamOpened> open_upstream(tcp::socket& socket, const UpstreamRequest& want,
                                              const AllowList& allowed, const ProxyConfig& config,
                                              const bool& abandoned) {
  if (config.upstream) {
    auto endpoints = co_await upstream_endpoints(*config.upstream);
    bool connected = co_await connect_any(socket, endpoints, abandoned);
    if (!connected) co_return UpstreamOpened{502, "the upstream proxy cannot be reached"};
    if (want.tunnel) {
      std::string refused = co_await upstream_tunnel(socket, want.authority);
      if (!refused.empty()) co_return UpstreamOpened{502, refused};
    }
    co_return UpstreamOpened{};
  }

  std::vector<tcp::endpoint> endpoints;
  std::string special;  // what the refused addresses were, for the reason
  if (is_ip_literal(want.host)) {
    // Allowed, so an entry names this very address: no check of what kind it is.
    endpoints.emplace_back(unmapped(asio::ip::make_address(want.host)), want.port);
  } else {
    auto addresses = co_await look_up(want.host);
    if (addresses.empty()) co_return UpstreamOpened{502, want.host + " could not be resolved"};
    const std::uint16_t default_port = want.tunnel ? 443 : 80;
    for (const auto& resolved : addresses) {
      auto address = unmapped(resolved);
      std::string kind = special_address(address);
      if (!kind.empty() && !allowed.names_literal(address, want.port, default_port)) {
        special = kind;
        continue;
      }
      endpoints.emplace_back(address, want.port);
    }
    if (endpoints.empty())
      co_return UpstreamOpened{403, want.host + " resolves to " +
                                        (special.empty() ? "no address" : special) +
                                        ", which this tenant's egress may not reach"};
  }
  bool connected = co_await connect_any(socket, endpoints, abandoned);
  if (!connected) co_return UpstreamOpened{502, "could not connect to " + want.authority};
  co_return UpstreamOpened{};
}

}  // namespace sandgate::egress
