#pragma once
// One sandbox: created once for a session, runs many calls one at a time, ends once.
//
// Thread-safety: run() must not be called concurrently on one sandbox (the session serialises
// calls); end(), ended() and spend_usd() may be called from any thread at any time.
#include <sys/types.h>

#include <atomic>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <functional>
#include <iterator>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "call_control.hpp"
#include "common/unique_fd.hpp"
#include "figure_frames.hpp"
#include "file_transfer.hpp"
#include "limits.hpp"
#include "meter.hpp"
#include "output_budget.hpp"

namespace sandgate::sandbox {

// The sandbox's cgroups (cgroups/cgroups.hpp), held by pointer: this header is read by every
// layer above sandbox/, and the cgroup code stays private to sandbox/ (cmake/check_layers.py).
class CgroupSet;

enum class Language { python, javascript, bash };
// Every language a sandbox runs, in the order tools list them; the names come from
// language_name(), the one place they are written.
inline constexpr Language kLanguages[] = {Language::python, Language::javascript, Language::bash};
std::optional<Language> parse_language(std::string_view name);
const char* language_name(Language language);

struct RunRequest {
  Language language = Language::python;
  std::string code;
  std::string stdin_data;
  std::chrono::milliseconds timeout{60'000};
  // Python and JavaScript run in the sandbox's persistent interpreter unless this asks for a
  // process of their own (as bash always gets).
  bool fresh = false;
  // Optional: sees the output as the program writes it (see OutputObserver). The result still
  // carries all of it.
  OutputObserver on_output;
};

enum class RunOutcome {
  completed,      // the program ended by itself (any exit code, or a signal)
  timed_out,      // killed at its timeout; partial output kept; the sandbox lives on
  cancelled,      // killed on request; the sandbox lives on
  sandbox_ended,  // the sandbox ended during or before the call (see end_reason)
};

enum class EndReason { none, closed, spend_cap, lifetime, failed };

// What a sandbox has used since it was made, as its meter's last sample saw it (about a second
// old while it lives; final once it ended): the figures its spend comes from.
struct SandboxUsage {
  double cpu_seconds = 0;
  double gib_seconds = 0;
  std::uint64_t egress_bytes = 0;  // relayed by the egress proxy, both ways
  double usd = 0;
  Prices prices;
  // When it ended (wall clock), once it has: its use stopped growing then.
  std::optional<std::chrono::system_clock::time_point> ended_at;
};
const char* end_reason_name(EndReason reason);

struct RunResult {
  RunOutcome outcome = RunOutcome::completed;
  int exit_code = -1;       // -1 when the program did not exit normally
  int signal = 0;           // the signal that ended it, if any
  std::string stdout_text;  // valid UTF-8 (invalid bytes replaced)
  std::string stderr_text;
  bool truncated = false;
  bool oom_killed = false;
  std::chrono::milliseconds duration{0};
  double spend_usd = 0;
  EndReason end_reason = EndReason::none;
  std::string failure;      // what went wrong, when outcome is sandbox_ended
  bool persistent = false;  // ran in the sandbox's persistent interpreter
  // Why the interpreter's state (variables, imports) did not survive this call; empty: it did.
  std::string state_lost;
  // Python's matplotlib figures (shown, or left open at the end), within FigureLimits; what was
  // dropped, in words (empty: nothing). A timed-out or cancelled call returns none.
  std::vector<Image> images;
  std::string images_note;
};

struct Interpreter;  // a persistent interpreter's channel (sandbox_interpreter.cpp)

struct FileIn {
  std::string path;  // as the client gave it: relative to /work, or absolute under it
  std::string content;
};

// Which files to read back, and how much of them.
struct FileReadRequest {
  std::vector<std::string> paths;  // each relative to /work or absolute under it
  std::string directory;           // instead of paths: every regular file directly in it
  std::uint64_t max_bytes_each = 0;
  std::uint64_t max_bytes_total = 0;
  std::uint32_t max_files = 0;  // for `directory`
  bool remove_after = false;    // delete each file read whole (e.g. collected plots)
};

struct TransferResult {
  bool done = false;
  std::string failure;                 // why not, when not done
  std::vector<TransferredFile> files;  // one per file, in order (paths relative to /work)
};

// /work packed for hibernation: opaque bytes made inside the sandbox (work_archive_process.hpp).
struct WorkArchive {
  bool done = false;
  std::string failure;  // why not, when not done
  // The archive, read from offset 0: a memfd the sandbox wrote (its pages are charged to the
  // sandbox's memory cgroup, never the gateway's), `size` bytes, at most the sandbox's /work.
  UniqueFd fd;
  std::uint64_t size = 0;
};

class Sandbox : public std::enable_shared_from_this<Sandbox> {
 public:
  using Clock = std::chrono::steady_clock;
  struct Parts;  // what SandboxHost hands over at creation
  Sandbox(Parts parts);
  ~Sandbox();
  Sandbox(const Sandbox&) = delete;
  Sandbox& operator=(const Sandbox&) = delete;

  boost::asio::awaitable<RunResult> run(RunRequest request,
                                        std::shared_ptr<CallControl> control = nullptr);

  // Moves files in and out of /work through a transfer process inside the sandbox (see
  // file_transfer.hpp): the gateway never opens a sandbox path itself. Like run(), never
  // concurrently with run() or another transfer. A path the client gave that is not under
  // /work comes back as invalid_path without reaching the sandbox.
  boost::asio::awaitable<TransferResult> write_files(std::vector<FileIn> files);
  boost::asio::awaitable<TransferResult> read_files(FileReadRequest what);
  // Hibernation: packs all of /work inside the sandbox, as its own uid (refused when the
  // archive would be larger than /work), and unpacks such an archive into this sandbox's
  // /work the same way. Like write_files, never concurrently with a call. The archive passes
  // as a descriptor (a memfd out, the stored file in): the gateway never holds its bytes.
  boost::asio::awaitable<WorkArchive> pack_work();
  boost::asio::awaitable<TransferResult> restore_work(UniqueFd archive);
  // The same, from bytes in memory (copied into a memfd first): for tests and tools.
  boost::asio::awaitable<TransferResult> restore_work(const std::string& archive);

  // Kills every process, removes its cgroups; its mounts and files vanish with its mount
  // namespace. Idempotent: the first reason wins.
  void end(EndReason reason, std::string detail = {});
  bool ended() const;
  EndReason end_reason() const;
  std::string end_detail() const;
  double spend_usd() const;
  SandboxUsage usage() const;
  // Memory its cgroup held at the meter's last sample (about a second old): for choosing whose
  // sandbox makes room under memory pressure, not for accounting.
  std::uint64_t memory_bytes() const;
  const Limits& limits() const { return limits_; }
  const std::string& id() const { return id_; }

  // A ready sandbox (ready_pool.hpp) given to a session or handle: from now on it counts as
  // made now — its lifetime, spend and meter start here, with `limits`' spend cap, lifetime and
  // output limit (the rest were fixed when it was built and are the same: pool_serves). False,
  // and nothing changed, when it has ended; false, and it is ended, when one of its started
  // interpreters has ended while it waited (an OOM kill would otherwise greet the session's first
  // call with "state lost" and no preload).
  bool hand_over(const Limits& limits);
  // A ready sandbox warms up (its interpreters start, the preload imports) with a background
  // share of contended CPU, behind the sessions' calls; hand_over gives it the default back.
  void warm_in_background();

  // Egress (Limits::egress). The listening socket of the sandbox's proxy, in its network
  // namespace, for whoever relays its connections; empty without egress or once taken. Ending the
  // sandbox closes it if nobody took it.
  UniqueFd take_egress_listener();
  // Charges bytes the proxy relayed to the spend; ends the sandbox at its spend cap. False when
  // the sandbox has ended (relay no more).
  bool charge_egress(std::uint64_t bytes);
  // Tool channel (Limits::tool_channel, issue #45): its listening unix socket, for whoever
  // answers on it; empty without one or once taken. Ending the sandbox closes it if not taken.
  UniqueFd take_tool_listener();
  // Charges a price (an upstream tool call's) to the spend; ends the sandbox at its spend cap.
  // False when the sandbox has ended or did with this charge.
  bool charge_usd(double usd);
  // When the call running now must end (its timeout); time_point::min() when none is running.
  std::chrono::steady_clock::time_point running_call_deadline() const {
    return std::chrono::steady_clock::time_point(std::chrono::steady_clock::duration(
        running_call_deadline_.load(std::memory_order_relaxed)));
  }
  // Calls started in this sandbox so far: a relay's per-call byte count restarts when it changes.
  std::uint64_t calls_started() const { return calls_started_.load(std::memory_order_relaxed); }
  // Runs `observer` when the sandbox ends (at once if it has): a relay stops with its sandbox, so
  // that nothing holds the sandbox's network namespace after it. Called under the sandbox's
  // lock, on whichever thread ends it: it must only signal or post, never call the sandbox.
  void when_ended(std::function<void()> observer);

  // Samples usage, enforces the spend cap and lifetime, and notices a dead supervisor.
  // Called by the host at least once a second and after each call.
  void check();

 private:
  // Ends the sandbox if its spend reached the cap (under mutex_); false then.
  bool within_spend_cap_locked();
  boost::asio::awaitable<TransferResult> transfer(const TransferRequest& request);
  // Runs one transfer process to its end; false with `failure` set when it did not succeed.
  boost::asio::awaitable<bool> run_transfer(const TransferRequest& request, int reply,
                                            std::string& failure);
  boost::asio::awaitable<RunResult> run_fresh(RunRequest request,
                                              std::shared_ptr<CallControl> control);
  boost::asio::awaitable<RunResult> run_in_interpreter(RunRequest request,
                                                       std::shared_ptr<CallControl> control);
  // The language's live interpreter, started when there is none; nullptr when the sandbox has
  // ended.
  Interpreter* interpreter_for(Language language, const boost::asio::any_io_executor& executor);
  // Stops a timed-out or cancelled call in the interpreter. Empty when its state survived;
  // otherwise why it did not (the interpreter has been killed).
  boost::asio::awaitable<std::string> interrupt(Interpreter& interpreter,
                                                std::uint64_t call_started_ns, std::uint32_t seq);
  // Sends the supervisor a request about one call and waits for its answer of type `answer`
  // (only these requests make it speak during a call, so the next message is that answer).
  boost::asio::awaitable<bool> ask_supervisor(const void* request, std::size_t size,
                                              std::uint32_t answer, std::uint32_t call_id);
  struct FreshCall;        // one fresh call's pipes and how it ended (sandbox.cpp)
  struct InterpreterCall;  // one call in an interpreter (sandbox_interpreter.cpp)
  // Hands a fresh call to the supervisor: its code in a memfd and the sandbox's ends of its
  // pipes. False when the sandbox has ended (or ends now: its supervisor does not answer).
  bool send_fresh_call(const RunRequest& request, FreshCall& call);
  // Waits for the program's end or its deadline (a timeout or a cancel: call_deadline), and
  // kills the call in the latter; then fires `ended`, which starts the output's grace period.
  boost::asio::awaitable<void> await_fresh_end(FreshCall& call,
                                               boost::asio::posix::stream_descriptor& status,
                                               boost::asio::steady_timer& deadline,
                                               const CallControl* control,
                                               boost::asio::steady_timer& ended);
  // The result's outcome, exit status and images, from how the fresh call ended.
  void settle_fresh_call(const FreshCall& call, FigureCollector& figures, RunResult& result);
  // "" or, when the language's interpreter ended since the last call, why (it is dropped: this
  // call starts a new one).
  boost::asio::awaitable<std::string> drop_ended_interpreter(std::size_t index);
  // Whether a started interpreter's process has ended (its init's status, or its replies pipe
  // closed), without waiting.
  static bool interpreter_ended(Interpreter& interpreter);
  // Sends the call to its interpreter and decides how it ended; true when the interpreter must
  // be replaced. Then stops the output pumps, which run until it is done.
  boost::asio::awaitable<bool> settle_interpreter_call(InterpreterCall& call, RunResult& result);
  // How a call ended whose interpreter has gone, from its init's word.
  boost::asio::awaitable<void> settle_interpreter_gone(Interpreter& interpreter, RunResult& result);
  RunResult finish(RunResult result, Clock::time_point started, std::uint64_t oom_before);
  // Kills one call's processes and waits until the supervisor reports them all gone.
  boost::asio::awaitable<bool> kill_call(std::uint32_t call_id);
  bool supervisor_alive_locked();
  void sample_locked(Clock::time_point now);  // charges use since the last sample
  void end_locked(EndReason reason, std::string detail);

  std::string id_;
  Limits limits_;
  Clock::time_point created_;
  std::function<void()> on_end_;                      // releases the host's slot
  std::vector<std::function<void()>> end_observers_;  // when_ended (under mutex_)
  UniqueFd egress_listener_;                          // until taken (under mutex_)
  UniqueFd tool_listener_;                            // until taken (under mutex_)
  // The running call's deadline (steady clock ticks; min() when none runs): run() sets it.
  std::atomic<std::chrono::steady_clock::rep> running_call_deadline_{
      std::chrono::steady_clock::time_point::min().time_since_epoch().count()};
  std::atomic<std::uint64_t> calls_started_{0};
  std::uint32_t next_call_id_ = 1;
  // One per language, started by the first call that needs it. Touched only by run().
  std::unique_ptr<Interpreter> interpreters_[std::size(kLanguages)];

  mutable std::mutex mutex_;
  pid_t supervisor_ = -1;
  UniqueFd control_;
  std::unique_ptr<CgroupSet> cgroups_;  // never null
  bool background_ = false;             // warming up at the background CPU share (under mutex_)
  SpendMeter meter_;
  std::optional<std::chrono::system_clock::time_point> ended_at_;
  EndReason end_reason_ = EndReason::none;
  std::string end_detail_;
};

struct Sandbox::Parts {
  std::string id;
  Limits limits;
  Prices prices;
  pid_t supervisor;
  UniqueFd control;
  std::unique_ptr<CgroupSet> cgroups;  // never null
  std::function<void()> on_end;
  UniqueFd egress_listener;  // with Limits::egress
  UniqueFd tool_listener;    // with Limits::tool_channel
};

}  // namespace sandgate::sandbox
