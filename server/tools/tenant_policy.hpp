#pragma once
// What the session layer applies to a tenant, from its tokens-file line: one translation for
// every place a session or handle is made (2025 sessions, handles, restored sessions).
#include "auth/token_store.hpp"
#include "session/registry.hpp"

namespace sandgate::server {

inline session::TenantPolicy policy_of(const auth::Tenant& tenant) {
  session::TenantPolicy policy;
  policy.name = tenant.name;
  policy.max_sessions = tenant.max_sessions;
  policy.spend_cap_usd = tenant.spend_cap_usd;
  policy.max_concurrent_calls = tenant.max_concurrent_calls;
  policy.max_sandboxes = tenant.max_sandboxes;
  policy.egress = tenant.egress;
  policy.egress_connections = tenant.egress_connections;
  if (tenant.egress_mb_per_call) policy.egress_bytes_per_call = *tenant.egress_mb_per_call << 20;
  if (tenant.egress_mb_per_sandbox)
    policy.egress_bytes_per_sandbox = *tenant.egress_mb_per_sandbox << 20;
  return policy;
}

}  // namespace sandgate::server
