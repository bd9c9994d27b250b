// Making room under sandbox pressure (the sandbox cap, the memory budget): which live sandbox
// goes, and hibernating or ending it while its session stays.
#include <algorithm>

#include "registry.hpp"
#include "registry_detail.hpp"

namespace sandgate::session {
namespace asio = boost::asio;

using registry_detail::idle_seconds;
using registry_detail::kind_noun;

std::vector<std::shared_ptr<Session>> Registry::room_candidates() const {
  // Outside the registry's lock: a snapshot is a copy of pointers, and the choice needs no
  // consistency with sessions coming and going (a session that ends meanwhile frees its slot).
  std::unordered_map<std::string, std::vector<std::shared_ptr<Session>>> live_by_tenant;
  for (auto& s : snapshot())
    if (s->has_live_sandbox()) live_by_tenant[s->tenant()].push_back(std::move(s));
  // The same rule as at the gateway's session cap: the tenant holding the most pays.
  std::vector<std::vector<std::shared_ptr<Session>>*> tenants;
  for (auto& [name, sessions] : live_by_tenant) tenants.push_back(&sessions);
  std::sort(tenants.begin(), tenants.end(),
            [](const auto* a, const auto* b) { return a->size() > b->size(); });
  std::vector<std::shared_ptr<Session>> out;
  for (auto* sessions : tenants) {
    std::sort(sessions->begin(), sessions->end(),
              [](const auto& a, const auto& b) { return a->last_used() < b->last_used(); });
    for (auto& s : *sessions) out.push_back(std::move(s));
  }
  return out;
}

asio::awaitable<Registry::RoomTry> Registry::free_sandbox_for_room(std::shared_ptr<Session> s,
                                                                   sandbox::Pressure pressure) {
  auto idle = std::chrono::seconds(idle_seconds(*s, Session::Clock::now()));
  Eviction eviction{s->id(), s->tenant(), s->kind(), EvictionReason::sandbox_cap, idle};
  if (pressure == sandbox::Pressure::memory_budget) eviction.reason = EvictionReason::memory_budget;
  bool failed = false;
  if (s->can_hibernate()) {
    std::string failure;
    eviction.hibernated = co_await s->hibernate(&failure);
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
      pressure == sandbox::Pressure::memory_budget
          ? "the sandboxes' shared memory budget was nearly used"
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
  int failures = 0;
  auto candidates = room_candidates();
  for (auto& s : candidates) {
    {
      std::lock_guard lock(mutex_);
      if (stopped_) co_return false;
    }
    if (s->busy()) continue;  // a call runs or waits: never made room from
    // A skip (in use, or being hibernated by another create) costs nothing and is bounded by
    // the candidates; a failed hibernation packed a /work for nothing, so those are bounded.
    RoomTry tried = co_await free_sandbox_for_room(s, pressure);
    if (tried == RoomTry::freed) co_return true;
    if (tried == RoomTry::failed && ++failures >= kMakeRoomFailures) break;
  }
  co_return false;
}

}  // namespace sandgate::session
