#include "registry.hpp"

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
}  // namespace

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

std::variant<std::shared_ptr<Session>, CreateRefusal> Registry::create(const TenantPolicy& tenant,
                                                                       SessionKind kind) {
  sandbox::Limits limits = host_.config().limits;
  if (tenant.spend_cap_usd) limits.spend_cap_usd = *tenant.spend_cap_usd;
  std::uint32_t tenant_max = tenant.max_sessions.value_or(config_.max_sessions_per_tenant);
  // A cap of 0 would never run a call: an unset default means "no share smaller than the pool".
  std::uint32_t call_cap = tenant.max_concurrent_calls.value_or(
      config_.max_concurrent_calls_per_tenant ? config_.max_concurrent_calls_per_tenant
                                              : std::numeric_limits<std::uint32_t>::max());

  std::lock_guard lock(mutex_);
  if (sessions_.size() >= config_.max_sessions) return CreateRefusal::too_many_sessions;
  auto& count = per_tenant_[tenant.name];
  if (count >= tenant_max) return CreateRefusal::too_many_for_tenant;
  std::string id = kind == SessionKind::handle ? new_handle_id(config_.replica_name)
                                               : new_session_id(config_.replica_name);
  auto session =
      std::make_shared<Session>(std::move(id), tenant.name, limits, host_, gateway_slots_, call_cap,
                                config_.calls_queued_per_session, kind, store_);
  sessions_.emplace(session->id(), session);
  ++count;
  return session;
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
  if (t != per_tenant_.end() && --t->second == 0) per_tenant_.erase(t);
  if (it->second->kind() == SessionKind::handle) {
    if (ended_order_.size() >= kRememberedEnds) {
      ended_.erase(ended_order_.front());
      ended_order_.pop_front();
    }
    if (ended_.emplace(it->first, Ended{it->second->tenant(), why}).second)
      ended_order_.push_back(it->first);
  }
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

std::optional<std::string> Registry::why_ended(const std::string& id,
                                               const std::string& tenant) const {
  std::lock_guard lock(mutex_);
  auto it = ended_.find(id);
  if (it == ended_.end() || it->second.tenant != tenant) return std::nullopt;
  return it->second.why;
}

std::vector<std::shared_ptr<Session>> Registry::snapshot() const {
  std::lock_guard lock(mutex_);
  std::vector<std::shared_ptr<Session>> out;
  out.reserve(sessions_.size());
  for (const auto& [id, s] : sessions_) out.push_back(s);
  return out;
}

void Registry::end_all() {
  std::unordered_map<std::string, std::shared_ptr<Session>> all;
  {
    std::lock_guard lock(mutex_);
    stopped_ = true;
    all.swap(sessions_);
    per_tenant_.clear();
  }
  asio::post(sweep_timer_.get_executor(), [this] { sweep_timer_.cancel(); });
  for (auto& [id, s] : all) s->end("the gateway is shutting down");
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
    if (co_await s->hibernate(&why))
      ++done;
    else if (on_hibernate_failed && !why.empty())
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
