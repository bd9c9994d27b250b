// The address a connection counts against (server/http/connection_io): per IPv4 address, per
// IPv6 /64.
#include "server/http/connection_io.hpp"

#include <boost/asio/ip/address.hpp>
#include <catch2/catch.hpp>

TEST_CASE("connections are counted per IPv4 address and per IPv6 /64",
          "[unit][transport][per-address]") {
  using boost::asio::ip::make_address;
  using sandgate::server::client_key;
  // One host usually holds a whole /64: rotating through it is one address.
  CHECK(client_key(make_address("2001:db8::1")) == client_key(make_address("2001:db8::ffff:1")));
  CHECK(client_key(make_address("2001:db8::1")) ==
        client_key(make_address("2001:db8:0:0:ffff:ffff:ffff:ffff")));
  CHECK(client_key(make_address("2001:db8::1")) != client_key(make_address("2001:db8:0:1::1")));
  // IPv4, also when it comes as a v4-mapped IPv6 address (a dual-stack listener), is per address.
  CHECK(client_key(make_address("192.0.2.1")) != client_key(make_address("192.0.2.2")));
  CHECK(client_key(make_address("::ffff:192.0.2.1")) == client_key(make_address("192.0.2.1")));
  CHECK(client_key(make_address("::ffff:192.0.2.1")) !=
        client_key(make_address("::ffff:192.0.2.2")));
}
