#include "common/loopback.hpp"

#include <boost/algorithm/string/predicate.hpp>
#include <boost/asio/ip/address.hpp>
#include <string>

namespace sandgate {

bool is_loopback_host(std::string_view host) {
  // An IP literal in 127.0.0.0/8 or ::1 (bracketed or not), or exactly the name localhost.
  // Never a prefix test: "127.evil.example" and "127.0.0.1.evil.example" are DNS names an
  // attacker controls (DNS rebinding).
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']')
    host = host.substr(1, host.size() - 2);
  if (boost::algorithm::iequals(host, "localhost")) return true;
  boost::system::error_code ec;
  // inet_pton underneath: only canonical dotted quads and IPv6 text, no "127.1" or hex forms.
  auto address = boost::asio::ip::make_address(std::string(host), ec);
  if (ec) return false;
  if (address.is_v4()) return address.to_v4().to_bytes()[0] == 127;
  return address.to_v6() == boost::asio::ip::address_v6::loopback();
}

}  // namespace sandgate
