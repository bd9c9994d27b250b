#pragma once
// The gateway-wide settings of the egress proxy (flags --egress-*; the per-tenant ones are in
// tenant_egress.hpp).
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

namespace sandgate::egress {

class TlsTermination;

struct UpstreamProxy {
  std::string host;  // a name or an IP literal (no brackets)
  std::uint16_t port = 3128;
  bool operator==(const UpstreamProxy&) const = default;
};

struct ProxyConfig {
  // --egress-upstream-proxy: every allowed connection goes through this HTTP proxy (CONNECT for
  // tunnels, absolute-form requests for plain HTTP) instead of straight to the destination. The
  // allow-list still decides; resolving the name, and so the address checks, is then the
  // upstream's.
  std::optional<UpstreamProxy> upstream;
  // A client's request head, a DNS answer plus a TCP connect, a tunnel's ClientHello: each must
  // come within this.
  std::chrono::milliseconds step_timeout{10'000};
  // A relayed connection with no byte either way for this long is closed.
  std::chrono::milliseconds idle_timeout{300'000};
  // Connections relayed at once by all the gateway's sandboxes together; more are closed
  // unanswered. Each holds two descriptors and, while it relays, two 64 KiB buffers: 512 of
  // them are 64 MiB of the gateway's memory at most, well inside --gateway-memory-reserve-mb,
  // whatever the tenants do (a package install uses a few at a time).
  std::size_t max_connections_total = 512;
  // Of those, one tenant's at most (the gateway sets half unless only one tenant can exist, as
  // for call slots); more get a 429 saying so.
  std::size_t max_connections_per_tenant = 256;
  // Hosts carrying a secret (issue #44): the gateway CA's files (--secrets-ca-cert/-key; empty:
  // made in the state dir), and what the proxy trusts for the real host (--egress-ca-file;
  // empty: the system's store).
  std::string ca_cert_file;
  std::string ca_key_file;
  std::string upstream_ca_file;
  // Made by the gateway at start when it has a secrets file (null: no termination, and no
  // secret applied inside TLS).
  std::shared_ptr<TlsTermination> termination;
  bool operator==(const ProxyConfig&) const = default;
};

// "host:port" (a name, an IPv4 literal or a bracketed IPv6 literal; port 1-65535), or an
// http:// URL of that form; nullopt when it is not one.
std::optional<UpstreamProxy> parse_upstream_proxy(const std::string& text);

}  // namespace sandgate::egress
