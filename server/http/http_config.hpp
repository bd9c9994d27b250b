#pragma once
// What the HTTP layer needs to serve: where to listen, with which certificate, and the bounds a
// slow or greedy client meets. The defaults live here; the gateway's option table writes into
// them (server/gateway/config.cpp).
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

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

  bool operator==(const HttpConfig&) const = default;
};

// Connections one client address may hold at once; 0 means no cap.
std::uint32_t effective_connections_per_address(const HttpConfig& config);

// An IP literal of the loopback range, or exactly `localhost` (brackets around IPv6 allowed).
bool is_loopback_host(std::string_view host);

}  // namespace sandgate::server
