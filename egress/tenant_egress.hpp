#pragma once
// What one tenant's sandboxes may reach through the egress proxy, and how much: its allow-list
// and its caps (tokens-file fields egress=, egress_connections=, egress_mb_per_call=,
// egress_mb_per_sandbox=, over the gateway's --egress-* defaults).
#include <cstdint>
#include <memory>
#include <vector>

#include "egress/allow_list.hpp"
#include "egress/header_secret.hpp"

namespace sandgate::egress {

struct TenantEgress {
  AllowList allowed;
  // Connections one sandbox may hold open through the proxy at once; more get a 403 at once.
  std::uint32_t max_connections = 16;
  // Bytes relayed (both ways) while one call runs, and over the sandbox's life; a connection
  // that crosses a cap is closed, and new ones get a 403 until the next call (the per-call cap)
  // or for good (the sandbox's).
  std::uint64_t max_bytes_per_call = 1ull << 30;
  std::uint64_t max_bytes_per_sandbox = 4ull << 30;
  // The tenant's secrets (issue #44): requests to each one's host get its header. Their hosts
  // are on `allowed` too.
  std::vector<std::shared_ptr<const HeaderSecret>> secrets;

  // The secret for this destination's requests (null: none). `default_port`: the scheme's.
  const HeaderSecret* secret_for(std::string_view host, std::uint16_t port,
                                 std::uint16_t default_port) const {
    for (const auto& secret : secrets)
      if (secret->applies_to(host, port, default_port)) return secret.get();
    return nullptr;
  }
};

}  // namespace sandgate::egress
