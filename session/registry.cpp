#include "registry.hpp"

#include <algorithm>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_awaitable.hpp>
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

Session::Clock::rep idle_seconds(const Session& s, Session::Clock::time_point now) {
  return std::chrono::duration_cast<std::chrono::seconds>(now - s.last_used()).count();
}

const char* kind_noun(SessionKind kind) {
  return kind == SessionKind::handle ? "sandbox" : "session";
}
}  // namespace

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
  }
  return "unknown";
}

Registry::Registry(asio::any_io_executor executor, RegistryConfig config,
                   sandbox::SandboxHost& host, CallSlots& gateway_slots, StateStore* store)
    : config_(config_with_sweep(config)),
      host_(host),
      gateway_slots_(gateway_slots),
      store_(store),
      sweep_timer_(executor) {
  asio::co_spawn(executor, sweep_loop(), asio::detached);
}

Registry::~Registry() {
  end_all();
}

void Registry::on_eviction(std::function<void(const Eviction&)> observer) {
  std::lock_guard lock(mutex_);
  on_eviction_ = std::move(observer);
}

std::size_t Registry::tenant_count_locked(const std::string& tenant) const {
  auto it = per_tenant_.find(tenant);
  return it == per_tenant_.end() ? 0 : it->second.size();
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

Registry::SessionTerms Registry::terms_for(const TenantPolicy& tenant) const {
  SessionTerms terms{host_.config().limits, 0};
  if (tenant.spend_cap_usd) terms.limits.spend_cap_usd = *tenant.spend_cap_usd;
  // A cap of 0 would never run a call: an unset default means "no share smaller than the pool".
  terms.call_cap = tenant.max_concurrent_calls.value_or(
      config_.max_concurrent_calls_per_tenant ? config_.max_concurrent_calls_per_tenant
                                              : std::numeric_limits<std::uint32_t>::max());
  return terms;
}

bool Registry::admit_locked(const std::shared_ptr<Session>& session) {
  if (!sessions_.emplace(session->id(), session).second) return false;
  per_tenant_[session->tenant()].insert(session.get());
  return true;
}

std::variant<std::shared_ptr<Session>, CreateRefusal> Registry::create(const TenantPolicy& tenant,
                                                                       SessionKind kind) {
  SessionTerms terms = terms_for(tenant);
  std::uint32_t tenant_max = tenant.max_sessions.value_or(config_.max_sessions_per_tenant);
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
    auto session =
        std::make_shared<Session>(std::move(id), tenant.name, terms.limits, host_, gateway_slots_,
                                  terms.call_cap, config_.calls_queued_per_session, kind, store_);
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

std::string Registry::idle_why() const {
  auto minutes = std::chrono::duration_cast<std::chrono::minutes>(config_.idle_timeout).count();
  return minutes > 0 ? "it was idle for " + std::to_string(minutes) + " min"
                     : "it was idle for " + std::to_string(config_.idle_timeout.count()) + " s";
}

std::size_t Registry::sweep_idle() {
  auto now = Session::Clock::now();
  std::vector<std::shared_ptr<Session>> expired;
  {
    std::lock_guard lock(mutex_);
    for (auto it = sessions_.begin(); it != sessions_.end();) {
      auto& s = it->second;
      bool idle = !s->busy() && now - s->last_used() >= config_.idle_timeout;
      if (idle || s->ended()) {
        expired.push_back(s);
        it = forget_locked(it, idle ? idle_why() : std::string("it ended"));
      } else {
        ++it;
      }
    }
  }
  for (auto& s : expired) s->end(idle_why());
  return expired.size();
}

asio::awaitable<void> Registry::sweep_loop() {
  for (;;) {
    sweep_timer_.expires_after(config_.sweep_interval);
    co_await sweep_timer_.async_wait(asio::as_tuple(asio::use_awaitable));
    {
      std::lock_guard lock(mutex_);
      if (stopped_) co_return;
    }
    sweep_idle();
    co_await hibernate_idle();
  }
}

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

void Registry::report(const Eviction& eviction) {
  std::function<void(const Eviction&)> observer;
  {
    std::lock_guard lock(mutex_);
    observer = on_eviction_;
  }
  if (observer) observer(eviction);
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

asio::awaitable<std::size_t> Registry::hibernate_idle() {
  if (!store_ || config_.hibernate_after.count() == 0) co_return 0;
  auto now = Session::Clock::now();
  std::size_t done = 0;
  for (auto& s : snapshot()) {
    if (s->busy() || !s->has_live_sandbox() || now - s->last_used() < config_.hibernate_after)
      continue;
    {
      std::lock_guard lock(mutex_);
      if (stopped_) co_return done;
    }
    std::string why;
    if (co_await s->hibernate(&why)) {
      ++done;
      ++idle_hibernations_;
    } else if (on_hibernate_failed && !why.empty())
      on_hibernate_failed(store_->file_name(s->id()), why);
  }
  co_return done;
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
