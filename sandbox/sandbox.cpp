#include "sandbox.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <cerrno>
#include <cstring>

#include "call_io.hpp"
#include "call_output.hpp"
#include "common/on_scope_exit.hpp"
#include "fd_passing.hpp"
#include "interpreter_channel.hpp"
#include "output_budget.hpp"
#include "protocol.hpp"
#include "sandbox/cgroups/cgroups.hpp"

namespace sandgate::sandbox {
namespace asio = boost::asio;
using namespace asio::experimental::awaitable_operators;

namespace {

// After the program ends, output still in the pipes is collected for at most this long (a
// background process may keep them open).
constexpr auto kDrainGrace = std::chrono::milliseconds(100);

asio::awaitable<void> feed(Descriptor& to, const std::string& data) {
  if (!data.empty()) co_await asio::async_write(to, asio::buffer(data), kTuple);
  boost::system::error_code ignored;
  to.close(ignored);
}

// Where the program's stdin comes from. Without stdin it reads /dev/null (EOF at once, as from
// an empty pipe): a pipe, its registration with the reactor and their teardown saved on most
// calls.
Pipe stdin_for(const std::string& data) {
  static const int dev_null = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (data.empty() && dev_null >= 0) {
    UniqueFd copy(::fcntl(dev_null, F_DUPFD_CLOEXEC, 0));
    if (copy) return {std::move(copy), {}};
  }
  return make_pipe();
}

// Waits until `ended` is cancelled (the program has ended), then a short grace period; then
// tells the pumps to stop (the `||` that runs this also cancels them, but a pump that had just
// been woken would wait again without the flag).
asio::awaitable<void> grace_after(asio::steady_timer& ended, bool& stop_pumps) {
  co_await ended.async_wait(kTuple);
  asio::steady_timer grace(co_await asio::this_coro::executor, kDrainGrace);
  co_await grace.async_wait(kTuple);
  stop_pumps = true;
}

UniqueFd code_memfd(const std::string& code) {
  UniqueFd fd(::memfd_create("sandgate-code", MFD_CLOEXEC));
  if (!fd) throw std::system_error(errno, std::generic_category(), "memfd_create");
  std::size_t done = 0;
  while (done < code.size()) {
    ssize_t n = ::write(fd.get(), code.data() + done, code.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw std::system_error(errno, std::generic_category(), "write code");
    done += static_cast<std::size_t>(n);
  }
  return fd;
}

enum class Ending { status, timeout, cancel };

}  // namespace

std::optional<Language> parse_language(std::string_view name) {
  for (Language language : kLanguages)
    if (name == language_name(language)) return language;
  return std::nullopt;
}

const char* language_name(Language language) {
  switch (language) {
    case Language::javascript:
      return "javascript";
    case Language::bash:
      return "bash";
    default:
      return "python";
  }
}

const char* end_reason_name(EndReason reason) {
  switch (reason) {
    case EndReason::closed:
      return "closed";
    case EndReason::spend_cap:
      return "spend_cap";
    case EndReason::lifetime:
      return "lifetime";
    case EndReason::failed:
      return "failed";
    default:
      return "none";
  }
}

Sandbox::Sandbox(Parts parts)
    : id_(std::move(parts.id)),
      limits_(parts.limits),
      created_(Clock::now()),
      on_end_(std::move(parts.on_end)),
      egress_listener_(std::move(parts.egress_listener)),
      tool_listener_(std::move(parts.tool_listener)),
      supervisor_(parts.supervisor),
      control_(std::move(parts.control)),
      cgroups_(std::move(parts.cgroups)),
      meter_(parts.prices, created_) {}

Sandbox::~Sandbox() {
  end(EndReason::closed);
}

bool Sandbox::ended() const {
  std::lock_guard lock(mutex_);
  return end_reason_ != EndReason::none;
}

EndReason Sandbox::end_reason() const {
  std::lock_guard lock(mutex_);
  return end_reason_;
}

std::string Sandbox::end_detail() const {
  std::lock_guard lock(mutex_);
  return end_detail_;
}

double Sandbox::spend_usd() const {
  std::lock_guard lock(mutex_);
  return meter_.usd();
}

SandboxUsage Sandbox::usage() const {
  std::lock_guard lock(mutex_);
  return {meter_.cpu_seconds(), meter_.gib_seconds(), meter_.egress_bytes(),
          meter_.usd(),         meter_.prices(),      ended_at_};
}

std::uint64_t Sandbox::memory_bytes() const {
  std::lock_guard lock(mutex_);
  return meter_.memory_bytes();
}

void Sandbox::end(EndReason reason, std::string detail) {
  std::lock_guard lock(mutex_);
  end_locked(reason, std::move(detail));
}

void Sandbox::end_locked(EndReason reason, std::string detail) {
  if (end_reason_ != EndReason::none) return;
  end_reason_ = reason;
  end_detail_ = std::move(detail);
  if (supervisor_ > 0) {
    // pid 1 of the sandbox: its death takes every process of the sandbox with it, and its
    // mount namespace (with /work and /tmp) goes when the last of them is gone.
    ::kill(supervisor_, SIGKILL);
    while (::waitpid(supervisor_, nullptr, 0) < 0 && errno == EINTR) {
    }
    supervisor_ = -1;
  }
  // The last use is charged before the counters go (an end by failure or close comes between
  // samples).
  sample_locked(Clock::now());
  ended_at_ = std::chrono::system_clock::now();
  cgroups_->remove();
  egress_listener_.reset();
  tool_listener_.reset();
  if (on_end_) std::exchange(on_end_, nullptr)();
  for (auto& observer : std::exchange(end_observers_, {})) observer();
}

UniqueFd Sandbox::take_egress_listener() {
  std::lock_guard lock(mutex_);
  return std::move(egress_listener_);
}

UniqueFd Sandbox::take_tool_listener() {
  std::lock_guard lock(mutex_);
  return std::move(tool_listener_);
}

bool Sandbox::charge_usd(double usd) {
  std::lock_guard lock(mutex_);
  if (end_reason_ != EndReason::none) return false;
  meter_.add_charge(usd);
  return within_spend_cap_locked();
}

bool Sandbox::charge_egress(std::uint64_t bytes) {
  std::lock_guard lock(mutex_);
  if (end_reason_ != EndReason::none) return false;
  meter_.add_egress(bytes);
  return within_spend_cap_locked();
}

bool Sandbox::within_spend_cap_locked() {
  // At once, not at the next sample: a fast download can cost more in a second than is left.
  if (meter_.usd() >= limits_.spend_cap_usd) {
    char text[128];
    std::snprintf(text, sizeof text, "spend cap of $%.2f reached", limits_.spend_cap_usd);
    end_locked(EndReason::spend_cap, text);
    return false;
  }
  return true;
}

void Sandbox::when_ended(std::function<void()> observer) {
  {
    std::lock_guard lock(mutex_);
    if (end_reason_ == EndReason::none) {
      end_observers_.push_back(std::move(observer));
      return;
    }
  }
  observer();
}

void Sandbox::sample_locked(Clock::time_point now) {
  meter_.sample(cgroups_->cpu_usage_ns(), cgroups_->memory_bytes(),
                cgroups_->memory_peak_since_last(), now);
}

bool Sandbox::supervisor_alive_locked() {
  if (supervisor_ <= 0) return false;
  if (::waitpid(supervisor_, nullptr, WNOHANG) == supervisor_) {
    supervisor_ = -1;
    return false;
  }
  return true;
}

bool Sandbox::hand_over(const Limits& limits) {
  std::lock_guard lock(mutex_);
  if (end_reason_ != EndReason::none || !supervisor_alive_locked()) return false;
  // No call has run in a ready sandbox, so nothing else touches its interpreters here.
  for (auto& interpreter : interpreters_)
    if (interpreter && interpreter_ended(*interpreter)) {
      end_locked(EndReason::failed, "an interpreter of the ready sandbox ended while it waited");
      return false;
    }
  // A session's sandbox left at the background share would lose every contended CPU race.
  if (background_ && !cgroups_->set_background(false)) {
    end_locked(EndReason::failed, "the ready sandbox's CPU share could not be restored");
    return false;
  }
  background_ = false;
  auto now = Clock::now();
  cgroups_->memory_peak_since_last();  // the build's watermark is not the session's
  meter_.restart(cgroups_->cpu_usage_ns(), cgroups_->memory_bytes(), now);
  created_ = now;
  limits_.spend_cap_usd = limits.spend_cap_usd;
  limits_.lifetime = limits.lifetime;
  limits_.output_bytes = limits.output_bytes;
  return true;
}

void Sandbox::warm_in_background() {
  std::lock_guard lock(mutex_);
  background_ = cgroups_->set_background(true);
}

void Sandbox::check() {
  std::lock_guard lock(mutex_);
  if (end_reason_ != EndReason::none) return;
  if (!supervisor_alive_locked()) {
    end_locked(EndReason::failed, "the sandbox's supervisor process died");
    return;
  }
  auto now = Clock::now();
  sample_locked(now);
  if (meter_.usd() >= limits_.spend_cap_usd) {
    char text[128];
    std::snprintf(text, sizeof text, "spend cap of $%.2f reached", limits_.spend_cap_usd);
    end_locked(EndReason::spend_cap, text);
  } else if (now - created_ >= limits_.lifetime) {
    end_locked(EndReason::lifetime,
               "lifetime of " + std::to_string(limits_.lifetime.count()) + " s is over");
  }
}

RunResult Sandbox::finish(RunResult result, Clock::time_point started, std::uint64_t oom_before) {
  check();
  std::lock_guard lock(mutex_);
  if (result.outcome == RunOutcome::completed && result.signal == SIGKILL &&
      end_reason_ == EndReason::none)
    result.oom_killed = cgroups_->oom_kills() > oom_before;
  result.duration = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - started);
  result.spend_usd = meter_.usd();
  if (result.outcome == RunOutcome::sandbox_ended) {
    result.end_reason = end_reason_ == EndReason::none ? EndReason::failed : end_reason_;
    if (result.failure.empty()) result.failure = end_detail_;
  } else {
    result.end_reason = end_reason_;
  }
  return result;
}

asio::awaitable<bool> Sandbox::kill_call(std::uint32_t call_id) {
  protocol::Header kill{protocol::MessageType::kill, call_id, protocol::Language::python, 0};
  co_return co_await ask_supervisor(
      &kill, sizeof kill, static_cast<std::uint32_t>(protocol::MessageType::reaped), call_id);
}

asio::awaitable<bool> Sandbox::ask_supervisor(const void* request, std::size_t size,
                                              std::uint32_t answer, std::uint32_t call_id) {
  auto executor = co_await asio::this_coro::executor;
  {
    std::lock_guard lock(mutex_);
    if (end_reason_ != EndReason::none) co_return true;  // everything is gone already
    if (send_message(control_.get(), request, size) != 0) co_return false;
  }
  // A close-on-exec copy: a plain dup() would leak into any exec.
  Descriptor watch(executor, ::fcntl(control_.get(), F_DUPFD_CLOEXEC, 0));
  asio::steady_timer deadline(executor, kKillGrace);
  for (;;) {
    auto which =
        co_await (watch.async_wait(Descriptor::wait_read, kTuple) || deadline.async_wait(kTuple));
    if (which.index() == 1) co_return false;
    auto msg = receive_message(control_.get(), sizeof(protocol::Header), 0, true);
    if (msg.error == EAGAIN) continue;
    if (msg.closed || msg.error != 0 || msg.data.size() != sizeof(protocol::Header))
      co_return ended();
    protocol::Header h;
    std::memcpy(&h, msg.data.data(), sizeof h);
    if (static_cast<std::uint32_t>(h.type) == answer && h.call_id == call_id) co_return true;
  }
}

asio::awaitable<RunResult> Sandbox::run(RunRequest request, std::shared_ptr<CallControl> control) {
  calls_started_.fetch_add(1, std::memory_order_relaxed);
  // A session runs one call at a time in its sandbox: the deadline is this call's until it ends.
  running_call_deadline_.store((Clock::now() + request.timeout).time_since_epoch().count(),
                               std::memory_order_relaxed);
  OnScopeExit no_call([this] {
    running_call_deadline_.store(Clock::time_point::min().time_since_epoch().count(),
                                 std::memory_order_relaxed);
  });
  if (request.fresh || request.language == Language::bash)
    co_return co_await run_fresh(std::move(request), std::move(control));
  co_return co_await run_in_interpreter(std::move(request), std::move(control));
}

// One fresh call: the pipes it is given (the sandbox's ends go to it in the run message; ours
// stay), and how it ended.
struct Sandbox::FreshCall {
  FreshCall(std::uint32_t call_id, const RunRequest& request)
      : id(call_id),
        with_figures(request.language == Language::python),
        in(stdin_for(request.stdin_data)),
        out(make_pipe()),
        err(make_pipe()),
        status(make_pipe()),
        figures(with_figures ? make_pipe() : Pipe{}) {}

  // The sandbox holds its ends now; ours must go so that EOF means "the program is done".
  void drop_sandbox_ends() {
    in.read.reset();
    out.write.reset();
    err.write.reset();
    status.write.reset();
    figures.write.reset();
  }

  std::uint32_t id;
  // Python gets a figure channel (its matplotlib figures come back as images); the others do
  // not.
  bool with_figures;
  Pipe in, out, err, status, figures;
  std::uint64_t oom_before = 0;
  Ending ending = Ending::status;
  std::optional<protocol::Status> ended_status;  // its init's word (Ending::status only)
};

namespace {

// Our ends of a fresh call's pipes, as streams of the executor.
struct FreshStreams {
  FreshStreams(const asio::any_io_executor& executor, Pipe& in, Pipe& out, Pipe& err, Pipe& status,
               Pipe& figure_pipe)
      : figures(adopt(executor, figure_pipe.read)),
        stdout_pipe(executor, out.read.release()),
        stderr_pipe(executor, err.read.release()),
        status_pipe(executor, status.read.release()),
        stdin_pipe(adopt(executor, in.write)) {}

  // A stream of `fd`, or one that is not open where there is none (no stdin, no figures).
  static Descriptor adopt(const asio::any_io_executor& executor, UniqueFd& fd) {
    Descriptor stream(executor);
    if (fd) stream.assign(fd.release());
    return stream;
  }

  Descriptor figures, stdout_pipe, stderr_pipe, status_pipe, stdin_pipe;
};

}  // namespace

asio::awaitable<RunResult> Sandbox::run_fresh(RunRequest request,
                                              std::shared_ptr<CallControl> control) {
  auto self = shared_from_this();
  auto executor = co_await asio::this_coro::executor;
  auto started = Clock::now();
  RunResult result;

  FreshCall call(next_call_id_++, request);
  if (!send_fresh_call(request, call)) {
    result.outcome = RunOutcome::sandbox_ended;
    co_return finish(std::move(result), started, 0);
  }
  call.drop_sandbox_ends();
  FreshStreams streams(executor, call.in, call.out, call.err, call.status, call.figures);
  auto deadline = call_deadline(executor, control.get(), request.timeout);
  asio::steady_timer ended_event(executor, asio::steady_timer::time_point::max());

  CallOutput output(limits_.output_bytes, request.on_output);
  bool stop_pumps = false;
  FigureCollector collected;
  // Only the streams this call has: each operand of a parallel group is a coroutine started,
  // and one that ends at once (stdin without data) a handler posted, on every call.
  auto io = pump(streams.stdout_pipe, output.out(), output.budget, &stop_pumps) &&
            pump(streams.stderr_pipe, output.err(), output.budget, &stop_pumps);
  if (streams.stdin_pipe.is_open())
    io = std::move(io) && feed(streams.stdin_pipe, request.stdin_data);
  if (call.with_figures)
    io = std::move(io) && pump_figures(streams.figures, collected, &stop_pumps);
  co_await ((std::move(io) || grace_after(ended_event, stop_pumps)) &&
            await_fresh_end(call, streams.status_pipe, *deadline, control.get(), ended_event));
  if (control) control->disarm();

  output.move_to(result);
  settle_fresh_call(call, collected, result);
  co_return finish(std::move(result), started, call.oom_before);
}

bool Sandbox::send_fresh_call(const RunRequest& request, FreshCall& call) {
  UniqueFd code = code_memfd(request.code);
  std::lock_guard lock(mutex_);
  if (end_reason_ != EndReason::none) return false;
  call.oom_before = cgroups_->oom_kills();
  protocol::Header header{protocol::MessageType::run, call.id,
                          static_cast<protocol::Language>(request.language), 0};
  int fds[protocol::kRunFdCountWithFigures] = {
      code.get(),           call.in.read.get(),      call.out.write.get(),
      call.err.write.get(), call.status.write.get(), call.figures.write.get()};
  std::span<const int> sent(
      fds, call.with_figures ? protocol::kRunFdCountWithFigures : protocol::kRunFdCount);
  if (send_message(control_.get(), &header, sizeof header, sent) != 0) {
    end_locked(EndReason::failed, "the sandbox's supervisor does not answer");
    return false;
  }
  return true;
}

asio::awaitable<void> Sandbox::await_fresh_end(FreshCall& call, Descriptor& status,
                                               asio::steady_timer& deadline,
                                               const CallControl* control,
                                               asio::steady_timer& ended) {
  auto first = co_await (read_status(status) || deadline.async_wait(kTuple));
  if (first.index() == 0) {
    call.ended_status = std::get<0>(first);
  } else {
    call.ending = cancelled(control) ? Ending::cancel : Ending::timeout;
    if (!co_await kill_call(call.id))
      end(EndReason::failed, "the sandbox did not stop a killed call");
  }
  ended.cancel();
}

void Sandbox::settle_fresh_call(const FreshCall& call, FigureCollector& figures,
                                RunResult& result) {
  switch (call.ending) {
    case Ending::timeout:
      result.outcome = RunOutcome::timed_out;
      break;
    case Ending::cancel:
      result.outcome = RunOutcome::cancelled;
      break;
    case Ending::status:
      if (!call.ended_status) {
        // The call's init vanished without a word: we did not kill it, so the sandbox is
        // broken (or was ended under us: cap, lifetime, DELETE).
        end(EndReason::failed, "the sandbox's processes were killed");
        result.outcome = RunOutcome::sandbox_ended;
      } else if (call.ended_status->kind == protocol::StatusKind::spawn_failed) {
        end(EndReason::failed, spawn_failure_text(call.ended_status->value, limits_.max_processes));
        result.outcome = RunOutcome::sandbox_ended;
      } else {
        take_wait_status(call.ended_status->value, result.exit_code, result.signal);
        result.images = figures.take_images();
        result.images_note = figures.note();
      }
      break;
  }
}

}  // namespace sandgate::sandbox
