#pragma once
// What the HTTP layer needs to serve: where to listen, with which certificate, and the bounds a
// slow or greedy client meets. The defaults live here; the gateway's option table writes into
// them (server/gateway/config.cpp).
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "common/loopback.hpp"

namespace sandgate::server {

struct HttpConfig {
  std::string listen_host = "127.0.0.1";
  std::uint16_t listen_port = 8080;
  std::string tls_cert, tls_key;  // both set: TLS
  // 0: the gateway's effective_body_limit (room for the largest stdin and files a call may send).
  std::uint64_t body_limit_bytes = 0;
  std::chrono::seconds header_timeout{30};  // also bounds an idle keep-alive connection
  std::chrono::seconds body_timeout{60};
  std::uint32_t max_connections = 1024;
  // Unset: max(8, max_connections / 4) (effective_connections_per_address); 0: no cap.
  std::optional<std::uint32_t> max_connections_per_address;
  // A connection whose request carries this secret (kPeerSecretHeader) is another replica's
  // forwarding: it counts against no address's share. "" when replicas share none.
  std::string peer_secret;

  bool operator==(const HttpConfig&) const = default;
};

// Sent by a replica with each request it forwards to another (--peer-secret-file).
constexpr const char* kPeerSecretHeader = "X-Sandgate-Peer-Secret";
// Shorter secrets are refused at start.
constexpr std::size_t kMinPeerSecret = 32;

// Whether `presented` is the deployment's peer secret; false when there is none. Compares
// digests in constant time: a client learns nothing of the secret from how long a refusal took.
bool is_peer_secret(std::string_view presented, std::string_view secret);

// Connections one client address may hold at once; 0 means no cap.
std::uint32_t effective_connections_per_address(const HttpConfig& config);

using sandgate::is_loopback_host;

}  // namespace sandgate::server
