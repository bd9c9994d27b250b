// Eviction at the session caps: which session makes room for a new one, forgetting it under
// the registry's lock, and ending and reporting it once the lock is released.
#include <algorithm>

#include "registry.hpp"
#include "registry_detail.hpp"

namespace sandgate::session {

using registry_detail::idle_seconds;
using registry_detail::kind_noun;

const char* eviction_reason_name(EvictionReason reason) {
  switch (reason) {
    case EvictionReason::tenant_cap:
      return "tenant_cap";
    case EvictionReason::gateway_cap:
      return "gateway_cap";
    case EvictionReason::sandbox_cap:
      return "sandbox_cap";
    case EvictionReason::memory_budget:
      return "memory_budget";
    case EvictionReason::tenant_share:
      return "tenant_share";
  }
  return "unknown";
}

void Registry::on_eviction(std::function<void(const Eviction&)> observer) {
  std::lock_guard lock(mutex_);
  on_eviction_ = std::move(observer);
}

Session* Registry::eviction_victim(const TenantSessions& among) {
  Session* victim = nullptr;
  for (Session* s : among) {
    if (s->ended()) return s;  // already over (its sandbox failed to start, ...): free room
    if (s->busy()) continue;   // a call runs or waits: never ended for room
    if (!victim || s->last_used() < victim->last_used()) victim = s;
  }
  return victim;
}

Session* Registry::gateway_victim_locked() const {
  // Evicting the globally least recently used session would let one tenant's churn push out
  // every other tenant's sessions; the tenant holding the most pays instead, so a tenant that
  // holds few keeps them. Tenants are few (one per tokens-file line): sorting them is cheap.
  std::vector<const TenantSessions*> tenants;
  tenants.reserve(per_tenant_.size());
  for (const auto& [name, sessions] : per_tenant_) tenants.push_back(&sessions);
  std::sort(tenants.begin(), tenants.end(),
            [](const auto* a, const auto* b) { return a->size() > b->size(); });
  for (const auto* sessions : tenants)
    if (Session* victim = eviction_victim(*sessions)) return victim;
  return nullptr;
}

std::string Registry::evict_why(const Session& victim, EvictionReason reason,
                                std::uint64_t cap) const {
  std::string noun = kind_noun(victim.kind());
  std::string idle = std::to_string(idle_seconds(victim, Session::Clock::now()));
  if (reason == EvictionReason::tenant_cap)
    return "the " + noun + " was ended to make room for a newer one of its tenant (it was the " +
           "least recently used, idle for " + idle + " s; the tenant may have " +
           std::to_string(cap) + " sessions and sandboxes open)";
  return "the " + noun + " was ended to make room for a newer one on this gateway (its tenant " +
         "held the most; it was that tenant's least recently used, idle for " + idle +
         " s; the gateway may have " + std::to_string(cap) + " sessions and sandboxes open)";
}

Registry::Evicted Registry::evict_locked(Session* victim, EvictionReason reason,
                                         std::uint64_t cap) {
  auto it = sessions_.find(victim->id());
  Evicted out{it->second,
              Eviction{victim->id(), victim->tenant(), victim->kind(), reason,
                       std::chrono::seconds(idle_seconds(*victim, Session::Clock::now()))},
              evict_why(*victim, reason, cap)};
  forget_locked(it, out.why);
  return out;
}

void Registry::finish(std::vector<Evicted>& evicted) {
  if (evicted.empty()) return;
  std::function<void(const Eviction&)> observer;
  {
    std::lock_guard lock(mutex_);
    observer = on_eviction_;
  }
  // Ending kills processes and waits for them: done outside the registry's lock.
  for (auto& e : evicted) {
    e.session->end(e.why);
    if (observer) observer(e.eviction);
  }
}

void Registry::report(const Eviction& eviction) {
  std::function<void(const Eviction&)> observer;
  {
    std::lock_guard lock(mutex_);
    observer = on_eviction_;
  }
  if (observer) observer(eviction);
}

}  // namespace sandgate::session
