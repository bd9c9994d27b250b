#pragma once
// All live sessions of this gateway: id -> session, with overall and per-tenant limits, and
// the idle sweep that ends sessions (and their sandboxes) nobody has used for a while.
#include <atomic>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <variant>
#include <vector>

#include "egress/allow_list.hpp"
#include "egress/proxy_config.hpp"
#include "egress/relay.hpp"
#include "egress/tenant_egress.hpp"
#include "saved_sessions.hpp"
#include "session.hpp"
#include "tenant/tenant_terms.hpp"
#include "upstream/tool_channel.hpp"

namespace sandgate::session {

// What a full cap does to a new session: end the least recently used idle one to make room
// (clients that never DELETE would otherwise lock their tenant out), or refuse the new one.
enum class AtSessionCap { evict, refuse };

struct RegistryConfig {
  // A session without a sandbox costs about 1.3 KiB of gateway memory (bench/session_cost): the
  // sandbox cap bounds the real resources, these bound bookkeeping (50000: about 65 MiB, well
  // inside the memory kept for the gateway).
  std::size_t max_sessions = 50'000;
  AtSessionCap at_session_cap = AtSessionCap::evict;
  std::chrono::seconds idle_timeout{30 * 60};
  std::chrono::milliseconds sweep_interval{5000};
  // A live sandbox with no call for this long is hibernated (needs a StateStore); 0: never.
  std::chrono::seconds hibernate_after{600};
  std::size_t calls_queued_per_session = 16;
  std::string replica_name;  // prefixes session ids when set
  // Egress (issue #30): the proxy's settings (each tenant's allow-list and caps are its terms').
  egress::ProxyConfig egress_proxy;

  bool operator==(const RegistryConfig&) const = default;
};

enum class CreateRefusal { too_many_sessions, too_many_for_tenant };

// Why a session or a sandbox was ended to make room for a newer one.
enum class EvictionReason {
  tenant_cap,     // the tenant had its maximum of sessions and handles
  gateway_cap,    // the gateway had its maximum of sessions and handles
  sandbox_cap,    // the gateway had its maximum of live sandboxes (the session stays)
  memory_budget,  // the sandboxes used 90 % of their shared memory (the session stays)
  tenant_share,   // the tenant held its share of live sandboxes (the session stays)
};
const char* eviction_reason_name(EvictionReason reason);

// One eviction, for the log and the metrics (metadata only).
struct Eviction {
  std::string id;
  std::string tenant;
  SessionKind kind = SessionKind::session;
  EvictionReason reason = EvictionReason::tenant_cap;
  std::chrono::seconds idle{0};
  // For sandbox_cap and memory_budget: the sandbox was hibernated (its /work kept for the next
  // call), not ended.
  bool hibernated = false;
};

// What restore() did with a saved registry (for the log).
struct RestoreReport {
  std::vector<std::string> ids;      // restored: their archives are the ones to keep
  std::vector<std::string> tenants;  // ids[i]'s tenant
  std::size_t sessions = 0, handles = 0, with_sandbox = 0;
  std::size_t unknown_tenant = 0;  // their tenant is no longer in the tokens file
  std::size_t expired = 0;         // idle past the idle timeout by now
  std::size_t duplicate = 0;       // an id this registry already has
  std::size_t over_cap = 0;        // beyond the gateway's or its tenant's session cap now
};

// One session or handle as an operator sees it (registry_admin.cpp): never its whole id outside
// the gateway (the admin channel shows session_id's log_prefix).
struct SessionSummary {
  std::string id;
  std::string tenant;
  SessionKind kind = SessionKind::session;
  Session::Clock::time_point created, last_used;
  bool live = false, hibernated = false;
  double spend_usd = 0;
  std::size_t calls = 0;    // running or waiting their turn
  std::string environment;  // Session::environment(): "" until its first call decided it
};

class Registry : public TenantSandboxes {
 public:
  Registry(boost::asio::any_io_executor executor, RegistryConfig config, sandbox::SandboxHost& host,
           CallSlots& gateway_slots, StateStore* store = nullptr);
  ~Registry();

  // Handles count against the same caps as sessions: each holds a sandbox the same way.
  std::variant<std::shared_ptr<Session>, CreateRefusal> create(
      const tenant::Terms& tenant, SessionKind kind = SessionKind::session);
  // The session, if it exists, is of this kind, has not ended and belongs to this tenant;
  // else null.
  std::shared_ptr<Session> find(const std::string& id, const std::string& tenant,
                                SessionKind kind = SessionKind::session);
  // Whether a session or handle of this id is live, whoever owns it.
  bool exists(const std::string& id) const;
  // Ends and forgets the session; false when find() would not have found it.
  bool remove(const std::string& id, const std::string& tenant,
              SessionKind kind = SessionKind::session, std::string why = "the session was deleted");
  // A removal at a client's word (DELETE, end_sandbox) is answered once it is saved: with
  // restart survival, a checkpoint written after it is on disk, so the session does not come
  // back after a crash. Without a hook (no --state-dir) there is nothing to wait for. Set before
  // serving (nullptr clears it).
  void on_removal_saved(std::function<boost::asio::awaitable<void>()> wait_until_saved);
  boost::asio::awaitable<void> removal_saved() const;
  // Why this tenant's handle (or session) ended, while the registry still remembers (the most
  // recent kRememberedEnds); nothing for another tenant's, a live or an unknown one.
  std::optional<std::string> why_ended(const std::string& id, const std::string& tenant,
                                       SessionKind kind = SessionKind::handle) const;
  const std::string& replica_name() const { return config_.replica_name; }
  // The egress proxy's settings and the connection shares every relay holds a place of: an
  // environment's build relays through them too.
  std::shared_ptr<const egress::ProxyConfig> egress_proxy() const { return egress_proxy_; }
  std::shared_ptr<egress::ConnectionShares> egress_shares() const { return egress_shares_; }
  // With evict, a refusal at a cap means every candidate had a call running or waiting.
  AtSessionCap at_session_cap() const { return config_.at_session_cap; }
  static constexpr std::size_t kRememberedEnds = 4096;
  // Told of every eviction, outside the registry's lock. Set before serving.
  void on_eviction(std::function<void(const Eviction&)> observer);
  // Told of the end of every connection through a sandbox's egress proxy (on the relay's strand:
  // quick and thread-safe). Set before serving.
  void on_egress(egress::ConnectionObserver observer) { egress_observer_ = std::move(observer); }
  // The gateway's upstream MCP servers (issue #45): a tenant's sandboxes get a tool channel to
  // those its terms name (TenantTerms::upstreams), within `limits`; `observer` is told of each
  // tool call. Without this no sandbox gets a channel. Set before serving.
  void use_upstreams(std::shared_ptr<upstream::Upstreams> upstreams, upstream::ChannelLimits limits,
                     upstream::ToolCallObserver observer = {});
  // Under pressure (the sandbox cap, the memory budget): hibernates the least recently used idle
  // sandbox of the tenant holding the most (live sandboxes, or their memory) (its session or handle
  // stays; its next call resumes with its /work), or ends it when hibernation is off or fails. A
  // sandbox that gets a call meanwhile, or is being hibernated already, is skipped for the next one
  // (never waited for); after kMakeRoomFailures failed hibernations it gives up. False when none
  // could go. For SandboxHost::set_make_room.
  boost::asio::awaitable<bool> make_room(sandbox::Pressure pressure);
  static constexpr int kMakeRoomFailures = 4;
  // TenantSandboxes, for this registry's sessions: the tenant's live sandboxes and those being
  // made, counted; at its share, its own least recently used sandbox that nothing uses goes
  // (EvictionReason::tenant_share) — never another tenant's.
  boost::asio::awaitable<SandboxPlace> place_for(const Session& asking, std::size_t cap) override;
  // Ends every session (gateway shutdown) and stops the sweep.
  void end_all();
  // Ends sessions idle for longer than the idle timeout; returns how many.
  std::size_t sweep_idle();
  // Hibernates live sandboxes with no call for hibernate_after, one at a time; returns how many.
  boost::asio::awaitable<std::size_t> hibernate_idle();
  // Sandboxes hibernated by hibernate_idle since start (make_room's are told as evictions).
  std::uint64_t idle_hibernations() const { return idle_hibernations_; }
  // Passes of the idle sweep since start: rises every sweep interval while the sweep lives.
  std::uint64_t sweeps() const { return sweeps_; }
  // Told (session id hash, why) when a hibernation was tried and failed: for the log.
  std::function<void(const std::string&, const std::string&)> on_hibernate_failed;

  // Restart survival (registry_restart.cpp). The registry as the state directory keeps it:
  // every session and handle that has not ended, sorted by id.
  SavedRegistry save() const;
  // Serves the saved sessions again, with their tenant's current policy, age, spend and
  // sandbox (resumed on their next call). `tenant_of` gives a tenant's terms, or null when
  // it no longer exists: its sessions are dropped.
  RestoreReport restore(const SavedRegistry& saved,
                        const std::function<tenant::Terms(const std::string&)>& tenant_of);
  // Hibernates every live sandbox with no call running or waiting, however recently used,
  // several at a time; none is started after `deadline`. For a graceful stop. Returns how many.
  boost::asio::awaitable<std::size_t> hibernate_all_idle(Session::Clock::time_point deadline);
  // end_all(), but hibernated sandboxes' archives stay: the gateway's successor resumes them.
  void release_all(const std::string& why);

  // Its sessions' sandboxes' use is recorded through `reporting` (for sessions made or restored
  // from now on: set before serving).
  void report_usage(UsageReporting reporting);
  // Every session's sandbox use so far, as ledger records: the ledger writer's collect hook.
  std::vector<ledger::UsageRecord> usage_records() const;
  // Ends the live sandboxes of `tenant`'s sessions and handles, whose budget is spent (`why`
  // says which and when it resets); the sessions stay. Returns how many ended.
  std::size_t end_sandboxes_for_budget(const std::string& tenant, const std::string& why);
  // The operator's view and hands (registry_admin.cpp). Every session and handle of `tenant`
  // (all tenants when empty), in no particular order.
  std::vector<SessionSummary> summaries(const std::string& tenant = {}) const;
  // Ends and forgets the sessions and handles `pick` chooses, as remove() does each (their
  // sandboxes, hibernated archives, running and waiting calls, which are told `why`); their
  // ids. `pick` runs under the registry's lock: it must not call into the registry.
  std::vector<std::string> end_where(const std::function<bool(const Session&)>& pick,
                                     const std::string& why);
  // end_where for one tenant's sessions and handles.
  std::vector<std::string> end_tenant(const std::string& tenant, const std::string& why);

  std::size_t size() const;  // sessions and handles
  std::size_t handles() const;
  std::size_t hibernated() const;  // sessions and handles whose sandbox is hibernated
  double spend_usd() const;

 private:
  boost::asio::awaitable<void> sweep_loop();
  std::string idle_why() const;  // "it was idle for 30 min"
  std::vector<std::shared_ptr<Session>> snapshot() const;
  using Sessions = std::unordered_map<std::string, std::shared_ptr<Session>>;
  // Erases one session and its tenant's count, remembering why a handle ended; returns the
  // next entry.
  Sessions::iterator forget_locked(Sessions::iterator it, const std::string& why);
  using TenantSessions = std::unordered_set<Session*>;
  // Stops the registry (no session is added after) and hands over every session it held.
  Sessions stop_and_take_all();
  std::size_t tenant_count_locked(const std::string& tenant) const;
  // The session of `among` to end for room: an ended one, else the least recently used one
  // with no call running or waiting; null when all are busy. A scan, but only of one tenant's
  // sessions and only on the rare at-cap path.
  static Session* eviction_victim(const TenantSessions& among);
  // Evicts, for a gateway at its cap, from the tenant holding the most sessions.
  Session* gateway_victim_locked() const;
  struct Evicted {
    std::shared_ptr<Session> session;
    Eviction eviction;
    std::string why;  // what later requests on it are told
  };
  // Forgets `victim` and returns what to end and report once the lock is released.
  Evicted evict_locked(Session* victim, EvictionReason reason, std::uint64_t cap);
  std::string evict_why(const Session& victim, EvictionReason reason, std::uint64_t cap) const;
  // Ends the evicted sessions and reports them; called without the lock.
  void finish(std::vector<Evicted>& evicted);
  // What a session of `tenant` runs under, by the tenant's policy now (a new session's, and a
  // restored one's): its sandbox limits and its cap of calls at once.
  struct SessionTerms {
    sandbox::Limits limits;
    TenantShare share;
    std::shared_ptr<const egress::TenantEgress> egress;  // null: no egress
  };
  // Gives a new session, before it serves, what its terms do not carry: its usage reporting,
  // its tenant's egress, the tenant's terms.
  void equip(Session& session, const SessionTerms& terms, tenant::Terms tenant);
  SessionTerms terms_for(const tenant::TenantTerms& tenant) const;
  // Adds `session` to the map and to its tenant's set; false when its id is taken.
  bool admit_locked(const std::shared_ptr<Session>& session);
  // Live sessions with a live sandbox in the order make_room tries them: the tenants holding
  // the most first (live sandboxes at the sandbox cap, their memory under the memory budget),
  // each tenant's least recently used first.
  std::vector<std::shared_ptr<Session>> room_candidates(sandbox::Pressure pressure) const;
  // `tenant`'s sessions other than `except` with a live sandbox, least recently used first.
  std::vector<std::shared_ptr<Session>> live_sandboxes_of(const std::string& tenant,
                                                          const Session* except) const;
  // Frees `s`'s sandbox for room: hibernated when it can be, else ended if idle. Skipped when
  // it is in use or being hibernated; failed when its hibernation failed and it could not end.
  enum class RoomTry { freed, skipped, failed };
  boost::asio::awaitable<RoomTry> free_sandbox_for_room(std::shared_ptr<Session> s,
                                                        EvictionReason reason);
  void report(const Eviction& eviction);

  RegistryConfig config_;
  sandbox::SandboxHost& host_;
  CallSlots& gateway_slots_;
  StateStore* const store_;
  boost::asio::steady_timer sweep_timer_;

  mutable std::mutex mutex_;
  bool stopped_ = false;
  Sessions sessions_;
  // Each tenant's live sessions (pointers into sessions_): its count, and where its eviction
  // victim is looked for.
  std::unordered_map<std::string, TenantSessions> per_tenant_;
  std::function<void(const Eviction&)> on_eviction_;
  std::shared_ptr<const UsageReporting> usage_;              // null: usage is not recorded
  std::shared_ptr<const egress::ProxyConfig> egress_proxy_;  // config_.egress_proxy, shared
  std::shared_ptr<egress::ConnectionShares> egress_shares_;  // every relay's, each tenant's share
  egress::ConnectionObserver egress_observer_;
  std::shared_ptr<upstream::Upstreams> upstreams_;  // null: no tool channels
  upstream::ChannelLimits tool_limits_;
  upstream::ToolCallObserver tool_observer_;
  std::function<boost::asio::awaitable<void>()> removal_saved_;
  struct Ended {
    std::string tenant, why;
    SessionKind kind;
  };
  std::unordered_map<std::string, Ended> ended_;  // id -> why, bounded
  std::deque<std::string> ended_order_;           // oldest first
  // Fresh sandboxes being made, per tenant: counted with its live ones by place_for. Shared
  // with the places handed out, which a call's coroutine may drop after the registry is gone.
  struct SandboxesBeingMade {
    std::mutex mutex;
    std::unordered_map<std::string, std::size_t> per_tenant;
  };
  std::shared_ptr<SandboxesBeingMade> being_made_ = std::make_shared<SandboxesBeingMade>();
  std::atomic<std::uint64_t> idle_hibernations_{0};
  std::atomic<std::uint64_t> sweeps_{0};
};

}  // namespace sandgate::session
