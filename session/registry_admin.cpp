// The operator's view of the registry and its hands on it: list sessions, end them (the admin
// channel, server/admin/; a tenant revoked by a reload of the tokens file or OAuth policy).
#include "registry.hpp"

namespace sandgate::session {

std::vector<SessionSummary> Registry::summaries(const std::string& tenant) const {
  std::vector<SessionSummary> out;
  for (const auto& s : snapshot()) {
    if (!tenant.empty() && s->tenant() != tenant) continue;
    if (s->ended()) continue;
    SessionSummary summary;
    summary.id = s->id();
    summary.tenant = s->tenant();
    summary.kind = s->kind();
    summary.created = s->created();
    summary.last_used = s->last_used();
    const auto state = s->saved_state();
    summary.live = state.live;
    summary.hibernated = state.hibernated;
    summary.spend_usd = state.spend_usd;
    summary.environment = state.environment;
    summary.calls = s->calls_in_flight();
    out.push_back(std::move(summary));
  }
  return out;
}

std::vector<std::string> Registry::end_where(const std::function<bool(const Session&)>& pick,
                                             const std::string& why) {
  std::vector<std::shared_ptr<Session>> chosen;
  {
    std::lock_guard lock(mutex_);
    for (auto it = sessions_.begin(); it != sessions_.end();) {
      if (pick(*it->second)) {
        chosen.push_back(it->second);
        it = forget_locked(it, why);
      } else {
        ++it;
      }
    }
  }
  // Ending kills processes and waits for them: outside the registry's lock, as remove() does.
  std::vector<std::string> ids;
  for (const auto& s : chosen) {
    s->end(why);
    ids.push_back(s->id());
  }
  return ids;
}

std::vector<std::string> Registry::end_tenant(const std::string& tenant, const std::string& why) {
  return end_where([&tenant](const Session& s) { return s.tenant() == tenant; }, why);
}

}  // namespace sandgate::session
