#pragma once
// What one tenant's sandboxes may reach through the egress proxy, and how much: its allow-list
// and its caps (tokens-file fields egress=, egress_connections=, egress_mb_per_call=,
// egress_mb_per_sandbox=, over the gateway's --egress-* defaults).
#include <cstdint>

#include "allow_list.hpp"

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
};

}  // namespace sandgate::egress
