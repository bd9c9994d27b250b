#pragma once
// Names the egress proxy resolves, on threads of its own. getaddrinfo blocks and cannot be
// cancelled: a slow or unanswered zone a tenant lists ties up these threads only, never the one
// resolver thread the rest of the gateway shares (OAuth key fetches, replica forwarding).
#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/address.hpp>
#include <cstddef>
#include <string>
#include <vector>

namespace sandgate::egress {

// Lookups that may run at once, for all sandboxes together (each sandbox's relay runs at most two:
// relay_connection.cpp); more wait their turn.
inline constexpr std::size_t kLookupThreads = 8;

// The addresses `host` resolves to (the system's resolver: /etc/hosts, then DNS), in its order;
// empty when it resolves to none.
boost::asio::awaitable<std::vector<boost::asio::ip::address>> look_up(std::string host);

}  // namespace sandgate::egress
