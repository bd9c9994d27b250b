#include "server/http/http_config.hpp"

#include <openssl/crypto.h>
#include <openssl/sha.h>

#include <algorithm>
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

}  // namespace sandgate::server
