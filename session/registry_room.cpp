// Making room under sandbox pressure (the sandbox cap, the memory budget): which live sandbox
// goes, and hibernating or ending it while its session stays.
#include <algorithm>

#include "registry.hpp"
#include "registry_detail.hpp"

namespace sandgate::session {
namespace asio = boost::asio;

using registry_detail::idle_seconds;
using registry_detail::kind_noun;
using registry_detail::last_use;
using registry_detail::memory_held;
using registry_detail::sort_by;

std::vector<std::shared_ptr<Session>> Registry::room_candidates(sandbox::Pressure pressure) const {
  // Outside the registry's lock: a snapshot is a copy of pointers, and the choice needs no
  // consistency with sessions coming and going (a session that ends meanwhile frees its slot).
  struct Holding {
    std::vector<std::shared_ptr<Session>> sessions;
    std::uint64_t weight = 0;  // live sandboxes, or the memory they hold
  };
  std::unordered_map<std::string, Holding> by_tenant;
  for (auto& s : snapshot()) {
    if (!s->has_live_sandbox()) continue;
    Holding& h = by_tenant[s->tenant()];
    h.weight += pressure == sandbox::Pressure::memory_budget ? s->sandbox_memory_bytes() : 1;
    h.sessions.push_back(std::move(s));
  }
  // The same rule as at the gateway's session cap: the tenant holding the most pays — the most
  // sandboxes at the sandbox cap, the most memory under the memory budget.
  std::vector<Holding*> tenants;
  for (auto& [name, holding] : by_tenant) tenants.push_back(&holding);
  std::sort(tenants.begin(), tenants.end(),
            [](const auto* a, const auto* b) { return a->weight > b->weight; });
  std::vector<std::shared_ptr<Session>> out;
  for (auto* holding : tenants) {
    auto& sessions = holding->sessions;
    // Within it: the least recently used first, or under the memory budget the largest (a
    // small sandbox freed may not be enough, and the tries are few).
    if (pressure == sandbox::Pressure::memory_budget)
      sort_by(sessions, memory_held, true);
    else
      sort_by(sessions, last_use);
    for (auto& s : sessions) out.push_back(std::move(s));
  }
  return out;
}

asio::awaitable<Registry::RoomTry> Registry::free_sandbox_for_room(std::shared_ptr<Session> s,
                                                                   EvictionReason reason) {
  auto idle = std::chrono::seconds(idle_seconds(*s, Session::Clock::now()));
  Eviction eviction{s->id(), s->tenant(), s->kind(), reason, idle};
  bool failed = false;
  if (s->can_hibernate()) {
    std::string failure;
    eviction.hibernated = co_await s->hibernate(&failure, true);
    if (eviction.hibernated) {
      report(eviction);
      co_return RoomTry::freed;
    }
    // Not hibernated and no failure: a call or a read came, or another create is hibernating
    // it for its own room. Either way it is not this create's to end.
    if (failure.empty()) co_return RoomTry::skipped;
    failed = true;
    if (on_hibernate_failed) on_hibernate_failed(store_->file_name(s->id()), failure);
  }
  // Hibernation off or failed: the sandbox ends (its /work with it), as it did before sandboxes
  // could hibernate.
  std::string cap =
      reason == EvictionReason::memory_budget
          ? "the sandboxes' shared memory budget was nearly used"
      : reason == EvictionReason::tenant_share
          ? "its tenant held its share of live sandboxes"
          : "the gateway's sandbox cap is " + std::to_string(host_.config().max_sandboxes);
  std::string why = "the " + std::string(kind_noun(s->kind())) +
                    "'s sandbox was ended to make room for a newer one (it was the least "
                    "recently used, idle for " +
                    std::to_string(idle.count()) + " s; " + cap + ")";
  // Checked and done under the session's own lock: a call arriving meanwhile either already
  // holds the sandbox (then it is not ended) or gets a fresh one.
  if (!s->end_sandbox_if_idle(why)) co_return failed ? RoomTry::failed : RoomTry::skipped;
  report(eviction);
  co_return RoomTry::freed;
}

asio::awaitable<bool> Registry::make_room(sandbox::Pressure pressure) {
  const EvictionReason reason = pressure == sandbox::Pressure::memory_budget
                                    ? EvictionReason::memory_budget
                                    : EvictionReason::sandbox_cap;
  int failures = 0;
  auto candidates = room_candidates(pressure);
  for (auto& s : candidates) {
    {
      std::lock_guard lock(mutex_);
      if (stopped_) co_return false;
    }
    // A call or a read uses it: never made room from. A call still queued for a gateway slot
    // does not pin its sandbox (Session::using_sandbox).
    if (s->using_sandbox()) continue;
    // A skip (in use, or being hibernated by another create) costs nothing and is bounded by
    // the candidates; a failed hibernation packed a /work for nothing, so those are bounded.
    RoomTry tried = co_await free_sandbox_for_room(s, reason);
    if (tried == RoomTry::freed) co_return true;
    if (tried == RoomTry::failed && ++failures >= kMakeRoomFailures) break;
  }
  co_return false;
}

std::vector<std::shared_ptr<Session>> Registry::live_sandboxes_of(const std::string& tenant,
                                                                  const Session* except) const {
  std::vector<std::shared_ptr<Session>> own;
  {
    std::lock_guard lock(mutex_);
    auto it = per_tenant_.find(tenant);
    if (it != per_tenant_.end())
      for (Session* s : it->second)
        if (s != except)
          if (auto found = sessions_.find(s->id()); found != sessions_.end())
            own.push_back(found->second);
  }
  // Outside the registry's lock: a session's own lock is taken to ask.
  std::erase_if(own, [](const auto& s) { return !s->has_live_sandbox(); });
  sort_by(own, last_use);
  return own;
}

asio::awaitable<SandboxPlace> Registry::place_for(const Session& asking, std::size_t cap) {
  const std::string tenant = asking.tenant();
  int failures = 0;
  // Each pass either grants a place or frees one of the tenant's sandboxes (or gives up), so
  // the passes are bounded by what the tenant holds.
  for (;;) {
    {
      std::lock_guard lock(mutex_);
      if (stopped_) co_return SandboxPlace();
    }
    // Taken first, then the live ones counted: a sandbox made meanwhile is then counted either
    // as live or by its own place (given back only once it is its session's), so two calls of
    // a tenant can never both see room for one sandbox.
    std::size_t making = 0;
    SandboxPlace place;
    {
      std::lock_guard lock(being_made_->mutex);
      making = ++being_made_->per_tenant[tenant];
      place = SandboxPlace([book = being_made_, tenant] {
        std::lock_guard book_lock(book->mutex);
        if (--book->per_tenant[tenant] == 0) book->per_tenant.erase(tenant);
      });
    }
    auto own = live_sandboxes_of(tenant, &asking);
    if (own.size() + making <= cap) co_return place;
    place.reset();
    // At its share: one of its own sandboxes that nothing uses goes, least recently used first.
    RoomTry tried = RoomTry::skipped;
    for (auto& s : own) {
      if (s->using_sandbox()) continue;
      tried = co_await free_sandbox_for_room(s, EvictionReason::tenant_share);
      if (tried == RoomTry::freed) break;
      if (tried == RoomTry::failed && ++failures >= kMakeRoomFailures) co_return SandboxPlace();
    }
    if (tried != RoomTry::freed) co_return SandboxPlace();
  }
}

}  // namespace sandgate::session
