#include "server/http/http_config.hpp"

#include <openssl/crypto.h>
#include <openssl/sha.h>

#include <algorithm>
#include <boost/algorithm/string/predicate.hpp>
#include <boost/asio/ip/address.hpp>
#include <string>

namespace sandgate::server {

std::uint32_t effective_connections_per_address(const HttpConfig& config) {
  if (config.max_connections_per_address) return *config.max_connections_per_address;
  return std::max<std::uint32_t>(8, config.max_connections / 4);
}

bool is_peer_secret(std::string_view presented, std::string_view secret) {
  if (secret.empty() || presented.empty()) return false;
  unsigned char a[SHA256_DIGEST_LENGTH], b[SHA256_DIGEST_LENGTH];
  ::SHA256(reinterpret_cast<const unsigned char*>(presented.data()), presented.size(), a);
  ::SHA256(reinterpret_cast<const unsigned char*>(secret.data()), secret.size(), b);
  return ::CRYPTO_memcmp(a, b, sizeof a) == 0;
}

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

}  // namespace sandgate::server
