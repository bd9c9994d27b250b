#pragma once
// Which resolved addresses the egress proxy connects to by itself: public unicast only. A name
// that resolves to a private, loopback, link-local (cloud metadata: 169.254.169.254, fd00:ec2::254)
// or otherwise special address is refused unless the tenant's allow-list names that literal
// address (allow_list.hpp): DNS is not trusted to decide what inside the operator's network a
// sandbox can reach.
#include <boost/asio/ip/address.hpp>
#include <string>

namespace sandgate::egress {

// An IPv4-mapped IPv6 address (::ffff:a.b.c.d) as the IPv4 address it is; any other unchanged.
boost::asio::ip::address unmapped(const boost::asio::ip::address& address);

// "" when `address` is public unicast; otherwise what it is, in words for a 403's reason
// ("a loopback address", "a private address", "a link-local address (cloud metadata)", …).
// IPv4-mapped (::ffff:a.b.c.d), IPv4-compatible, NAT64 (64:ff9b::/96) and 6to4 (2002::/16)
// addresses are judged by the IPv4 address they carry.
std::string special_address(const boost::asio::ip::address& address);

}  // namespace sandgate::egress
