#pragma once
// One MCP session's state, independent of how it is named on the wire (today the
// Mcp-Session-Id header; in the 2026-07-28 revision a handle passed as a tool argument).
// It owns its sandbox, made on the first execute, and runs its calls one at a time, in order.
#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "async_semaphore.hpp"
#include "call_slots.hpp"
#include "egress/proxy_config.hpp"
#include "egress/relay.hpp"
#include "egress/tenant_egress.hpp"
#include "ledger/usage_record.hpp"
#include "sandbox/host.hpp"
#include "sandbox_usage_log.hpp"
#include "session_account.hpp"
#include "state_store.hpp"
#include "tenant/tenant_terms.hpp"
#include "tenant_share.hpp"
#include "upstream/tool_channel.hpp"

namespace sandgate::session {

enum class ExecuteStatus {
  ran,            // the program ran (see run.outcome)
  busy,           // the session's or the gateway's queue is full
  sandbox_error,  // the sandbox could not be created (message says why)
  session_ended,  // the session ended before the call could run (message says why)
  cancelled,      // cancelled while waiting its turn
  files_refused,  // the files to write could not all be written: the code did not run
  limit_reached,  // the session's spend cap or lifetime is reached: no sandbox starts (message)
  budget_spent,   // the tenant's daily or monthly budget is spent until it resets (message)
};

// Files a call writes into /work before its code runs and reads back after it ran.
struct CallFiles {
  std::vector<sandbox::FileIn> in;
  sandbox::FileReadRequest out;  // nothing is read back when it names no path
};

// Whether this call's sandbox was brought back from hibernation (said once, on that call).
enum class Resumed {
  no,
  with_files,     // /work as it was; processes and interpreter variables are gone
  without_files,  // a fresh, empty /work: the archive was dropped or did not restore (why says)
};

struct ExecuteResult {
  ExecuteStatus status = ExecuteStatus::ran;
  sandbox::RunResult run;
  std::string message;
  sandbox::TransferResult files_in;   // set when the call carried files
  sandbox::TransferResult files_out;  // set when it asked for files back and the sandbox lives
  // The sandbox the call ran in, when it ran: what resources minted from its files belong to.
  std::shared_ptr<sandbox::Sandbox> sandbox;
  Resumed resumed = Resumed::no;
  std::string resumed_why;  // for without_files
};

// How the session is named on the wire: by Mcp-Session-Id (2025 era), or as a sandbox handle
// passed back in tool arguments (both eras). One never stands in for the other.
enum class SessionKind { session, handle };

// A session brought back from the registry a previous gateway wrote (see saved_sessions): its
// age, spend and sandbox so far.
struct RestoredSession {
  std::chrono::steady_clock::time_point created, last_used;
  double spent_usd = 0;
  // It had a sandbox: the next call resumes it, with its archive when the store holds one,
  // else with an empty /work and `lost_files_why`.
  bool had_sandbox = false;
  std::string lost_files_why;
  std::string environment;  // Session::environment()
};

class Session {
 public:
  using Clock = std::chrono::steady_clock;
  // `share`: how many calls of this session's tenant may run at once (of `gateway_slots`) and
  // how many sandboxes it may hold (counted by `tenant_sandboxes`; not counted when null), as
  // the tenant's policy said when the session was made.
  Session(std::string id, std::string tenant, sandbox::Limits limits, sandbox::SandboxHost& host,
          CallSlots& gateway_slots, TenantShare share, std::size_t queue_depth,
          SessionKind kind = SessionKind::session, StateStore* store = nullptr,
          const RestoredSession* restored = nullptr, TenantSandboxes* tenant_sandboxes = nullptr);
  ~Session();

  const std::string& id() const { return id_; }
  const std::string& tenant() const { return tenant_; }
  SessionKind kind() const { return kind_; }
  Clock::time_point created() const { return created_; }
  Clock::time_point last_used() const;
  void touch();

  // Runs one program in this session's sandbox. `call_key` names the call for cancel();
  // `control`, when given, cancels it too — made by the caller before anything can cancel, so
  // that a cancel from another thread is never lost between the two.
  boost::asio::awaitable<ExecuteResult> execute(
      sandbox::RunRequest request, std::string call_key, CallFiles files = {},
      std::shared_ptr<sandbox::CallControl> control = nullptr);
  // Reads files of `expected`, in turn with this session's calls; nullopt when that sandbox is
  // no longer this session's live one (ended, replaced): its files are gone. `shared`, if
  // given, is a gateway-wide bound on reads shared between tenants: a permit of it is taken
  // only once this session's turn has come, so that a read waiting behind its own session's
  // long call holds nothing another tenant's read needs.
  boost::asio::awaitable<std::optional<sandbox::TransferResult>> read_files(
      std::shared_ptr<sandbox::Sandbox> expected, sandbox::FileReadRequest what,
      const TenantBound* shared = nullptr);
  // Kills the named call's processes if it runs, or drops it if it waits. No-op otherwise.
  void cancel(const std::string& call_key);
  // Ends the session and its sandbox now (processes killed, workspace gone). Idempotent; the
  // first `why` is what calls still running or waiting are told.
  void end(std::string why = "the session ended");
  // end(), but a hibernated sandbox's archive stays in the store: for a gateway stopping with
  // its registry saved, whose successor serves this session again.
  void end_keeping_archive(std::string why);
  // Ends the live sandbox because the tenant's budget is spent (`why` says which, and when it
  // resets): a call running there is told so; the session stays, and the budget decides whether
  // its next call runs. False when it had no live sandbox.
  bool end_sandbox_for_budget(std::string why);
  // Ends the session's sandbox now, keeping the session: its next call starts a fresh one.
  // A hibernated one ends too (its archive is deleted). False when there was neither.
  bool end_sandbox(std::string why);
  // end_sandbox, but only when no call runs or waits and nothing uses the sandbox: for making
  // room at the sandbox cap, which must never end a sandbox in use or lose a waiting call's
  // /work.
  bool end_sandbox_if_idle(std::string why);
  // Hibernates the live sandbox: takes its use (never waits for it), packs /work
  // inside the sandbox, stores the archive, then ends the sandbox; the next call restores /work
  // into a fresh one. False (and the sandbox lives on) when there is no store, no live
  // sandbox, a call or a read uses it or came to use it meanwhile, or packing or storing failed
  // (then only, `why` says why, for the log). The entry point for idle hibernation and for making
  // room under pressure.
  // `for_room`: a call merely waiting for a gateway slot does not stop it (that call resumes it
  // and is told); otherwise (the idle sweep, a stop) any call running or waiting does.
  boost::asio::awaitable<bool> hibernate(std::string* why = nullptr, bool for_room = false);
  // Whether hibernate() could pack this live sandbox: there is a store, and packing it has not
  // failed before (such a sandbox is ended when room is needed).
  bool can_hibernate() const;
  bool hibernated() const;
  // What the registry file records of the session besides its names and times.
  struct SavedState {
    double spend_usd = 0;
    bool live = false, hibernated = false;
    std::string environment;
  };
  SavedState saved_state() const;

  bool ended() const;
  bool busy() const;                    // a call runs or waits
  std::size_t calls_in_flight() const;  // calls running or waiting their turn
  // A call (past its gateway slot), a read or a hibernation is using the sandbox now. A call
  // still waiting for a gateway slot does not: its session's sandbox may be hibernated for room
  // meanwhile (the call resumes it), so that a queued call never pins a sandbox.
  bool using_sandbox() const;
  bool has_live_sandbox() const;
  // Memory its live sandbox holds (0 without one), as that sandbox's meter last saw it.
  std::uint64_t sandbox_memory_bytes() const;
  // What the session has spent: its ended sandboxes' spend and its live one's so far. Its spend
  // cap and lifetime hold across all of them (see SessionAccount).
  double spend_usd() const;
  // From now on its sandboxes' use is recorded through `reporting`: each sandbox's records as
  // the writer collects them, and its last when the session lets go of it. Set by the registry
  // before the session serves.
  void report_usage(std::shared_ptr<const UsageReporting> reporting);
  // Its sandbox's use so far, as ledger records: for the writer's periodic collection. An ended
  // sandbox's are given once (its last comes again when the session lets go of it).
  std::vector<ledger::UsageRecord> usage_records(ledger::Clock::time_point now);
  // Its tenant's egress (issue #30): each sandbox made for it from now on gets a relay for its
  // proxy socket (the session's limits ask for one: Limits::egress). Set by the registry before
  // the session serves.
  // `observer` (may be empty) is told of each relayed connection's end.
  void allow_egress(std::shared_ptr<const egress::TenantEgress> policy,
                    std::shared_ptr<const egress::ProxyConfig> proxy,
                    std::shared_ptr<egress::ConnectionShares> shares,
                    egress::ConnectionObserver observer = {});
  // Its tenant's upstream tools (issue #45): each sandbox made for it from now on gets a tool
  // channel for its socket (the session's limits ask for one: Limits::tool_channel). Set by the
  // registry before the session serves.
  void allow_tools(std::shared_ptr<const upstream::ChannelGrant> grant);
  // Its tenant's terms as they stand now: set by the registry when the session is made, and
  // again with each call (the terms of the request that made it, so that a reload of the tokens
  // file or the OAuth policy reaches a session's next call). Its budgets come from them; its
  // limits and shares stay as they were when it was made.
  void renew_terms(tenant::Terms terms);
  // The environment its sandboxes run in (issue #43): decided by the first call that needs a
  // sandbox, kept for the session's whole life (hibernation and a restart included); "" until
  // then.
  std::string environment() const;
  // Before a call: the environment it runs in (the caller checked that its tenant may, and that
  // it is the session's if the session has one) and the layer a fresh sandbox mounts ("" for
  // base). A live sandbox keeps the layer it was made with.
  // False (and nothing changed) when the session already runs another environment.
  bool use_environment(std::string name, std::string layer_dir);
  // What call `call` of its current sandbox reached through the egress proxy and was refused
  // (issue #44); empty without egress.
  egress::ConnectionLog::CallReport egress_report(std::uint64_t call) const;

 private:
  // Starts the relay of a sandbox made for the session, when its tenant has egress; the relay
  // stops when the sandbox ends (session_egress.cpp).
  void start_egress(const std::shared_ptr<sandbox::Sandbox>& fresh,
                    const boost::asio::any_io_executor& executor);
  // Starts the tool channel of a sandbox made for the session, when its tenant has upstreams; it
  // stops when the sandbox ends (session_tools.cpp).
  void start_tools(const std::shared_ptr<sandbox::Sandbox>& fresh,
                   const boost::asio::any_io_executor& executor);
  // The steps of execute() once the call has its turn and its gateway slot: its sandbox, its
  // files in, its run and its files out, told in `out`.
  boost::asio::awaitable<void> run_call(sandbox::RunRequest request, CallFiles files,
                                        std::shared_ptr<sandbox::CallControl> control,
                                        ExecuteResult& out);
  // Writes the call's files into `sandbox`; false (with `out` saying so) when not all were.
  boost::asio::awaitable<bool> write_call_files(std::shared_ptr<sandbox::Sandbox> sandbox,
                                                std::vector<sandbox::FileIn> in,
                                                ExecuteResult& out);
  // Lets go of `ended` (settling its spend) if it is still the session's sandbox.
  void forget_ended_sandbox(const std::shared_ptr<sandbox::Sandbox>& ended);
  // `out` says the session ended, and why.
  void tell_ended_locked(ExecuteResult& out) const;
  // The session's live sandbox, or a fresh one; null with `out`'s status and message saying why.
  boost::asio::awaitable<std::shared_ptr<sandbox::Sandbox>> sandbox_for_call(ExecuteResult& out);
  // What a call needs, decided under the lock before any sandbox is made: the live sandbox, or
  // the limits of a fresh one; neither when the call cannot run (`out` says why).
  struct SandboxNeed {
    std::shared_ptr<sandbox::Sandbox> live;
    std::optional<sandbox::Limits> fresh_limits;
  };
  SandboxNeed sandbox_need(ExecuteResult& out);
  // Whether the tenant's budgets leave room for a call; if not, `out` says which is spent and
  // when it resets. Takes the session's lock only to read where usage goes.
  bool budget_allows(ExecuteResult& out) const;
  // Makes `fresh` the session's sandbox unless the session ended meanwhile or none was made
  // (`refused` says why); null then, with `out` saying why.
  std::shared_ptr<sandbox::Sandbox> adopt_fresh(std::shared_ptr<sandbox::Sandbox> fresh,
                                                bool resumed, std::string refused,
                                                ExecuteResult& out);
  // Books an ended sandbox's final spend to the account; every sandbox the session lets go of
  // passes here exactly once.
  void settle_locked(const std::shared_ptr<sandbox::Sandbox>& ended);
  // The ledger's view of a sandbox made for the session (when usage is recorded): from when it
  // was made, whether or not it becomes the session's.
  void start_usage_log(const sandbox::Sandbox& fresh);
  UsageOwner usage_owner() const;
  // Counts a call that ran in `ran_in` (and what it printed) to that sandbox's usage.
  void count_call(const std::shared_ptr<sandbox::Sandbox>& ran_in, const sandbox::RunResult& run);
  std::string owner_text() const;  // "this session", or "this sandbox" for a handle
  // The call's result told in the session's terms: its total spend, and, when its sandbox ended
  // at the cap or lifetime, that the session's was reached.
  void account_for_locked(sandbox::RunResult& run, const std::shared_ptr<sandbox::Sandbox>& ran_in);
  // Restores the hibernated /work into `fresh` (or, when that fails, gives a clean sandbox);
  // says how in `out.resumed`.
  boost::asio::awaitable<std::shared_ptr<sandbox::Sandbox>> resume(
      std::shared_ptr<sandbox::Sandbox> fresh, sandbox::Limits limits, ExecuteResult& out);
  // resume() once the archive could not be restored into `failed`: a clean sandbox within what
  // the session has left, or null with `out` saying why.
  boost::asio::awaitable<std::shared_ptr<sandbox::Sandbox>> replace_unrestored(
      std::shared_ptr<sandbox::Sandbox> failed, sandbox::Limits limits, ExecuteResult& out);
  // hibernate() once `sandbox`'s /work is in the store: the session lets go of it and ends it;
  // false (the archive removed) when the session ended or replaced it meanwhile.
  bool finish_hibernation(const std::shared_ptr<sandbox::Sandbox>& sandbox);

  const std::string id_;
  const std::string tenant_;
  const SessionKind kind_;
  const sandbox::Limits limits_;
  // use_environment (under mutex_).
  std::string environment_;
  std::string environment_layer_;
  const Clock::time_point created_;
  std::atomic<Clock::rep> last_used_;
  sandbox::SandboxHost& host_;
  CallSlots& gateway_slots_;
  const TenantShare share_;
  TenantSandboxes* const tenant_sandboxes_;
  AsyncSemaphore call_order_;
  // Held by whatever uses the sandbox: a call once it has its gateway slot, a read once its turn
  // has come, a hibernation (which never waits for it). Calls and reads hold their turn first,
  // so at most one of them waits here, behind a hibernation under way.
  AsyncSemaphore sandbox_use_;

  mutable std::mutex mutex_;
  bool ended_ = false;
  std::string end_why_;
  std::shared_ptr<sandbox::Sandbox> sandbox_;
  SessionAccount account_;
  std::map<std::string, std::shared_ptr<sandbox::CallControl>> calls_;
  StateStore* const store_;    // null: hibernation off
  bool hibernated_ = false;    // the archive (if the store kept it) waits for the next call
  bool keep_archive_ = false;  // end_keeping_archive: the gateway's successor resumes it
  // Why a restored session's sandbox comes back without files when it has no archive.
  std::string lost_files_why_;
  // A sandbox whose packing failed is not tried again (it would fail the same way each sweep).
  const sandbox::Sandbox* pack_failed_ = nullptr;
  // Usage recording: where to (null: not recorded), and a log for each sandbox the session
  // has not let go of yet — its live one, and for a moment one being ended while the next is
  // made (keys are compared, never used); whether an ended live one's last record was collected.
  std::shared_ptr<const UsageReporting> usage_;
  std::map<const sandbox::Sandbox*, SandboxUsageLog> usage_logs_;
  bool usage_collected_ended_ = false;
  tenant::Terms terms_;  // null only in tests that make sessions without a registry
  // Egress: what the tenant's sandboxes may reach, and the gateway's proxy settings (null: none).
  std::shared_ptr<const egress::TenantEgress> egress_;
  std::shared_ptr<const egress::ProxyConfig> egress_proxy_;
  std::shared_ptr<egress::ConnectionShares> egress_shares_;
  egress::ConnectionObserver egress_observer_;
  std::shared_ptr<egress::ConnectionLog> egress_log_;    // the current sandbox's relay's
  std::shared_ptr<const upstream::ChannelGrant> tools_;  // null: no upstreams
};

}  // namespace sandgate::session
