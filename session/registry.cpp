// The registry's map of sessions: creating, finding and forgetting them, and its gauges. The
// other jobs live beside it: eviction at the caps (registry_eviction.cpp), the idle sweep and
// hibernation (registry_sweep.cpp), room under sandbox pressure (registry_room.cpp) and
// restart survival (registry_restart.cpp).
#include "registry.hpp"

#include <algorithm>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <limits>

#include "session_id.hpp"

namespace sandgate::session {
namespace asio = boost::asio;

namespace {
// Sweep often enough that a session never outlives its idle timeout by more than half of it.
RegistryConfig config_with_sweep(RegistryConfig c) {
  auto half = std::chrono::duration_cast<std::chrono::milliseconds>(c.idle_timeout) / 2;
  if (c.hibernate_after.count() > 0)
    half = std::min(half,
                    std::chrono::duration_cast<std::chrono::milliseconds>(c.hibernate_after) / 2);
  c.sweep_interval = std::max(std::chrono::milliseconds(100), std::min(c.sweep_interval, half));
  return c;
}
}  // namespace

Registry::Registry(asio::any_io_executor executor, RegistryConfig config,
                   sandbox::SandboxHost& host, CallSlots& gateway_slots, StateStore* store)
    : config_(config_with_sweep(config)),
      host_(host),
      gateway_slots_(gateway_slots),
      store_(store),
      sweep_timer_(executor),
      egress_proxy_(std::make_shared<const egress::ProxyConfig>(config.egress_proxy)),
      egress_shares_(std::make_shared<egress::ConnectionShares>(
          config.egress_proxy.max_connections_total,
          config.egress_proxy.max_connections_per_tenant)) {
  asio::co_spawn(executor, sweep_loop(), asio::detached);
}

Registry::~Registry() {
  end_all();
}

std::size_t Registry::tenant_count_locked(const std::string& tenant) const {
  auto it = per_tenant_.find(tenant);
  return it == per_tenant_.end() ? 0 : it->second.size();
}

Registry::SessionTerms Registry::terms_for(const tenant::TenantTerms& tenant) const {
  SessionTerms terms{host_.config().limits, {}, tenant.egress()};
  terms.limits.spend_cap_usd = tenant.spend_cap_usd;
  // 0: no share smaller than the gateway's own cap.
  if (tenant.max_concurrent_calls) terms.share.calls = tenant.max_concurrent_calls;
  if (tenant.max_sandboxes) terms.share.sandboxes = tenant.max_sandboxes;
  terms.limits.egress = terms.egress != nullptr;
  terms.limits.egress_gateway_ca = terms.limits.egress && !tenant.secrets.empty();
  // Limits::tool_channel comes with the host's limits: on a gateway with upstreams every sandbox,
  // the pool's too, has the channel's socket (so that the pool serves every tenant); only a
  // tenant with upstreams is answered on it (equip).
  return terms;
}

void Registry::use_upstreams(std::shared_ptr<upstream::Upstreams> upstreams,
                             upstream::ChannelLimits limits, upstream::ToolCallObserver observer) {
  upstreams_ = std::move(upstreams);
  tool_limits_ = limits;
  tool_observer_ = std::move(observer);
}

void Registry::equip(Session& session, const SessionTerms& terms, tenant::Terms tenant) {
  session.report_usage(usage_);
  std::vector<std::string> upstream_names = tenant ? tenant->upstreams : std::vector<std::string>{};
  session.renew_terms(std::move(tenant));
  if (terms.egress)
    session.allow_egress(terms.egress, egress_proxy_, egress_shares_, egress_observer_);
  if (terms.limits.tool_channel && upstreams_ && !upstream_names.empty())
    session.allow_tools(std::make_shared<const upstream::ChannelGrant>(upstream::ChannelGrant{
        upstreams_, std::move(upstream_names), tool_limits_, tool_observer_}));
}

bool Registry::admit_locked(const std::shared_ptr<Session>& session) {
  if (!sessions_.emplace(session->id(), session).second) return false;
  per_tenant_[session->tenant()].insert(session.get());
  return true;
}

std::variant<std::shared_ptr<Session>, CreateRefusal> Registry::create(
    const tenant::Terms& terms_of, SessionKind kind) {
  const tenant::TenantTerms& tenant = *terms_of;
  SessionTerms terms = terms_for(tenant);
  std::uint32_t tenant_max = tenant.max_sessions;
  const bool evict = config_.at_session_cap == AtSessionCap::evict;

  std::vector<Evicted> evicted;
  std::variant<std::shared_ptr<Session>, CreateRefusal> out = CreateRefusal::too_many_for_tenant;
  [&] {
    std::lock_guard lock(mutex_);
    // A loop, not one eviction: a cap lowered by a tokens-file reload leaves more sessions
    // open than it allows, and the tenant must not be locked out until they expire.
    while (tenant_count_locked(tenant.name) >= tenant_max) {
      auto mine = per_tenant_.find(tenant.name);
      Session* victim =
          evict && mine != per_tenant_.end() ? eviction_victim(mine->second) : nullptr;
      if (!victim) return;  // every one of them has a call running or waiting: refused
      evicted.push_back(evict_locked(victim, EvictionReason::tenant_cap, tenant_max));
    }
    while (sessions_.size() >= config_.max_sessions) {
      Session* victim = evict ? gateway_victim_locked() : nullptr;
      if (!victim) {
        out = CreateRefusal::too_many_sessions;
        return;
      }
      evicted.push_back(evict_locked(victim, EvictionReason::gateway_cap, config_.max_sessions));
    }
    std::string id = kind == SessionKind::handle ? new_handle_id(config_.replica_name)
                                                 : new_session_id(config_.replica_name);
    auto session = std::make_shared<Session>(
        std::move(id), tenant.name, terms.limits, host_, gateway_slots_, terms.share,
        config_.calls_queued_per_session, kind, store_, nullptr, this);
    equip(*session, terms, terms_of);
    admit_locked(session);  // a fresh random id: never taken
    out = std::move(session);
  }();
  finish(evicted);
  return out;
}

std::shared_ptr<Session> Registry::find(const std::string& id, const std::string& tenant,
                                        SessionKind kind) {
  std::lock_guard lock(mutex_);
  auto it = sessions_.find(id);
  // Another tenant's session is answered exactly like a missing one.
  if (it == sessions_.end() || it->second->tenant() != tenant || it->second->kind() != kind ||
      it->second->ended())
    return nullptr;
  return it->second;
}

Registry::Sessions::iterator Registry::forget_locked(Sessions::iterator it,
                                                     const std::string& why) {
  auto t = per_tenant_.find(it->second->tenant());
  if (t != per_tenant_.end()) {
    t->second.erase(it->second.get());
    if (t->second.empty()) per_tenant_.erase(t);
  }
  if (ended_order_.size() >= kRememberedEnds) {
    ended_.erase(ended_order_.front());
    ended_order_.pop_front();
  }
  if (ended_.emplace(it->first, Ended{it->second->tenant(), why, it->second->kind()}).second)
    ended_order_.push_back(it->first);
  return sessions_.erase(it);
}

bool Registry::remove(const std::string& id, const std::string& tenant, SessionKind kind,
                      std::string why) {
  std::shared_ptr<Session> session;
  {
    std::lock_guard lock(mutex_);
    auto it = sessions_.find(id);
    if (it == sessions_.end() || it->second->tenant() != tenant || it->second->kind() != kind)
      return false;
    session = it->second;
    forget_locked(it, why);
  }
  // Ending kills processes and waits for them: done outside the registry's lock.
  session->end(std::move(why));
  return true;
}

void Registry::on_removal_saved(std::function<asio::awaitable<void>()> wait_until_saved) {
  std::lock_guard lock(mutex_);
  removal_saved_ = std::move(wait_until_saved);
}

asio::awaitable<void> Registry::removal_saved() const {
  std::function<asio::awaitable<void>()> wait;
  {
    std::lock_guard lock(mutex_);
    wait = removal_saved_;
  }
  if (wait) co_await wait();
}

bool Registry::exists(const std::string& id) const {
  std::lock_guard lock(mutex_);
  return sessions_.count(id) > 0;
}

std::optional<std::string> Registry::why_ended(const std::string& id, const std::string& tenant,
                                               SessionKind kind) const {
  std::lock_guard lock(mutex_);
  auto it = ended_.find(id);
  if (it == ended_.end() || it->second.tenant != tenant || it->second.kind != kind)
    return std::nullopt;
  return it->second.why;
}

void Registry::report_usage(UsageReporting reporting) {
  usage_ = reporting.sink ? std::make_shared<const UsageReporting>(std::move(reporting)) : nullptr;
}

std::vector<ledger::UsageRecord> Registry::usage_records() const {
  std::vector<ledger::UsageRecord> out;
  if (!usage_) return out;
  const auto now = ledger::Clock::now();
  for (const auto& s : snapshot())
    for (auto& r : s->usage_records(now)) out.push_back(std::move(r));
  return out;
}

std::size_t Registry::end_sandboxes_for_budget(const std::string& tenant, const std::string& why) {
  std::vector<std::shared_ptr<Session>> theirs;
  {
    std::lock_guard lock(mutex_);
    auto mine = per_tenant_.find(tenant);
    if (mine == per_tenant_.end()) return 0;
    for (Session* s : mine->second)
      if (auto it = sessions_.find(s->id()); it != sessions_.end()) theirs.push_back(it->second);
  }
  // Outside the registry's lock: ending a sandbox kills its processes.
  std::size_t ended = 0;
  for (const auto& s : theirs) ended += s->end_sandbox_for_budget(why) ? 1 : 0;
  return ended;
}

std::vector<std::shared_ptr<Session>> Registry::snapshot() const {
  std::lock_guard lock(mutex_);
  std::vector<std::shared_ptr<Session>> out;
  out.reserve(sessions_.size());
  for (const auto& [id, s] : sessions_) out.push_back(s);
  return out;
}

Registry::Sessions Registry::stop_and_take_all() {
  Sessions all;
  {
    std::lock_guard lock(mutex_);
    stopped_ = true;
    all.swap(sessions_);
    per_tenant_.clear();
  }
  asio::post(sweep_timer_.get_executor(), [this] { sweep_timer_.cancel(); });
  return all;
}

void Registry::end_all() {
  for (auto& [id, s] : stop_and_take_all()) s->end("the gateway is shutting down");
}

std::size_t Registry::hibernated() const {
  std::size_t n = 0;
  for (const auto& s : snapshot()) n += s->hibernated();
  return n;
}

std::size_t Registry::size() const {
  std::lock_guard lock(mutex_);
  return sessions_.size();
}

std::size_t Registry::handles() const {
  std::lock_guard lock(mutex_);
  std::size_t n = 0;
  for (const auto& [id, s] : sessions_) n += s->kind() == SessionKind::handle;
  return n;
}

double Registry::spend_usd() const {
  double total = 0;
  for (const auto& s : snapshot()) total += s->spend_usd();
  return total;
}

}  // namespace sandgate::session
