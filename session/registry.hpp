#pragma once
// All live sessions of this gateway: id -> session, with overall and per-tenant limits, and
// the idle sweep that ends sessions (and their sandboxes) nobody has used for a while.
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
#include <variant>
#include <vector>

#include "session.hpp"

namespace sandgate::session {

struct RegistryConfig {
  std::size_t max_sessions = 1000;
  std::uint32_t max_sessions_per_tenant = 100;
  std::chrono::seconds idle_timeout{30 * 60};
  std::chrono::milliseconds sweep_interval{5000};
  // A live sandbox with no call for this long is hibernated (needs a StateStore); 0: never.
  std::chrono::seconds hibernate_after{600};
  std::size_t calls_queued_per_session = 16;
  // Calls one tenant may run at once (the tokens file may override); 0 until the gateway has
  // worked out its default (half of --max-concurrent-calls, or all of it for a single tenant).
  std::uint32_t max_concurrent_calls_per_tenant = 0;
  std::string replica_name;  // prefixes session ids when set

  bool operator==(const RegistryConfig&) const = default;
};

// Per-tenant overrides (from the tokens file).
struct TenantPolicy {
  std::string name;
  std::optional<std::uint32_t> max_sessions;
  std::optional<double> spend_cap_usd;
  std::optional<std::uint32_t> max_concurrent_calls = std::nullopt;
};

enum class CreateRefusal { too_many_sessions, too_many_for_tenant };

class Registry {
 public:
  Registry(boost::asio::any_io_executor executor, RegistryConfig config, sandbox::SandboxHost& host,
           CallSlots& gateway_slots, StateStore* store = nullptr);
  ~Registry();

  // Handles count against the same caps as sessions: each holds a sandbox the same way.
  std::variant<std::shared_ptr<Session>, CreateRefusal> create(
      const TenantPolicy& tenant, SessionKind kind = SessionKind::session);
  // The session, if it exists, is of this kind, has not ended and belongs to this tenant;
  // else null.
  std::shared_ptr<Session> find(const std::string& id, const std::string& tenant,
                                SessionKind kind = SessionKind::session);
  // Whether a session or handle of this id is live, whoever owns it.
  bool exists(const std::string& id) const;
  // Ends and forgets the session; false when find() would not have found it.
  bool remove(const std::string& id, const std::string& tenant,
              SessionKind kind = SessionKind::session, std::string why = "the session was deleted");
  // Why this tenant's handle ended, while the registry still remembers (the most recent
  // kRememberedEnds handles); nothing for another tenant's, a live or an unknown one.
  std::optional<std::string> why_ended(const std::string& id, const std::string& tenant) const;
  const std::string& replica_name() const { return config_.replica_name; }
  static constexpr std::size_t kRememberedEnds = 4096;
  // Ends every session (gateway shutdown) and stops the sweep.
  void end_all();
  // Ends sessions idle for longer than the idle timeout; returns how many.
  std::size_t sweep_idle();
  // Hibernates live sandboxes with no call for hibernate_after, one at a time; returns how many.
  boost::asio::awaitable<std::size_t> hibernate_idle();
  // Told (session id hash, why) when a hibernation was tried and failed: for the log.
  std::function<void(const std::string&, const std::string&)> on_hibernate_failed;

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

  RegistryConfig config_;
  sandbox::SandboxHost& host_;
  CallSlots& gateway_slots_;
  StateStore* const store_;
  boost::asio::steady_timer sweep_timer_;

  mutable std::mutex mutex_;
  bool stopped_ = false;
  Sessions sessions_;
  std::unordered_map<std::string, std::uint32_t> per_tenant_;
  struct Ended {
    std::string tenant, why;
  };
  std::unordered_map<std::string, Ended> ended_;  // handle id -> why, bounded
  std::deque<std::string> ended_order_;           // oldest first
};

}  // namespace sandgate::session
