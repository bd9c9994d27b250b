#include "server/gateway/tenant_defaults.hpp"

#include <algorithm>

namespace sandgate::server {
namespace {

// The calls one tenant may run at once unless its line says otherwise: half the pool, so that a
// tenant arriving while another is at its cap still finds slots; all of it where only one
// tenant can exist (one SANDGATE_TOKEN and no OAuth, or --no-auth).
std::uint32_t default_tenant_call_cap(const Config& config) {
  std::uint32_t pool = config.calls.max_concurrent;
  std::uint32_t set = config.tenants.max_concurrent_calls;
  if (set) return std::min(set, pool);
  if (config.auth.single_tenant()) return pool;
  return std::max<std::uint32_t>(1, pool / 2);
}

// The live sandboxes one tenant may hold unless its line says otherwise: half of
// --max-sandboxes, so that a tenant arriving while another holds its share still finds room;
// no share where only one tenant can exist. (The memory budget is shared by pressure instead:
// room is made from the tenant whose sandboxes hold the most memory.)
std::uint32_t default_tenant_sandbox_cap(const Config& config) {
  std::uint32_t set = config.tenants.max_sandboxes;
  if (set) return set;
  if (config.auth.single_tenant()) return 0;
  return std::max<std::uint32_t>(1, config.host.max_sandboxes / 2);
}

}  // namespace

tenant::TenantTerms tenant_defaults(const Config& config) {
  tenant::TenantTerms terms = config.tenants;
  terms.spend_cap_usd = config.host.limits.spend_cap_usd;
  terms.max_concurrent_calls = default_tenant_call_cap(config);
  terms.max_sandboxes = default_tenant_sandbox_cap(config);
  return terms;
}

}  // namespace sandgate::server
