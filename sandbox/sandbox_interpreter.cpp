// Sandbox::run for Python and JavaScript: the call's code runs in the sandbox's persistent
// interpreter of that language, started by the first call that needs it.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/write.hpp>
#include <cstring>

#include "call_output.hpp"
#include "fd_passing.hpp"
#include "interpreter_channel.hpp"
#include "sandbox.hpp"
#include "sandbox/cgroups/cgroups.hpp"

namespace sandgate::sandbox {
namespace asio = boost::asio;
using namespace asio::experimental::awaitable_operators;
using interpreter_wire::Reply;
using interpreter_wire::ReplyKind;

namespace {

// How long an interrupted call has to give control back before its interpreter is killed.
constexpr auto kInterruptGrace = std::chrono::seconds(2);

std::uint64_t boottime_ns() {
  timespec now{};
  ::clock_gettime(CLOCK_BOOTTIME, &now);
  return static_cast<std::uint64_t>(now.tv_sec) * 1'000'000'000ull +
         static_cast<std::uint64_t>(now.tv_nsec);
}

// Reads the channel up to the next reply; the image frames before it that belong to call
// `seq` go to `figures` (none are kept without it). Reads never go past the reply, and where
// they stand survives a cancel. nullopt: the interpreter has gone (or closed its end).
asio::awaitable<std::optional<Reply>> read_reply(Interpreter& interpreter, std::uint32_t seq,
                                                 FigureCollector* figures) {
  std::array<char, 64 * 1024> buffer;
  for (;;) {
    if (auto header = interpreter.reader.take_other()) {
      Reply reply;
      std::memcpy(&reply, header->data(), sizeof reply);
      co_return reply;
    }
    auto [ec, n] = co_await interpreter.replies.async_read_some(
        asio::buffer(buffer.data(), interpreter.reader.wanted()), kTuple);
    if (ec) co_return std::nullopt;
    interpreter.reader.take(buffer.data(), n, seq, figures);
  }
}

// Writes the request, then waits for its reply. nullopt: the interpreter has gone (or closed
// its end), so the reply will never come.
asio::awaitable<std::optional<Reply>> exchange(Interpreter& interpreter, const std::string& frame,
                                               std::uint32_t seq, FigureCollector& figures) {
  auto [ec, n] = co_await asio::async_write(interpreter.requests, asio::buffer(frame), kTuple);
  if (ec) co_return std::nullopt;
  co_return co_await read_reply(interpreter, seq, &figures);
}

bool valid(const Reply& reply, std::uint32_t seq) {
  return reply.magic == interpreter_wire::kReplyMagic && reply.seq == seq &&
         (reply.kind == static_cast<std::uint32_t>(ReplyKind::finished) ||
          reply.kind == static_cast<std::uint32_t>(ReplyKind::interrupted));
}

// What the model is told about an interpreter that ended by itself.
std::string ended_text(int wait_status) {
  if (WIFEXITED(wait_status))
    return "the interpreter exited with code " + std::to_string(WEXITSTATUS(wait_status));
  if (WIFSIGNALED(wait_status))
    return std::string("the interpreter was killed by signal ") +
           std::to_string(WTERMSIG(wait_status)) + " (" + ::strsignal(WTERMSIG(wait_status)) + ")";
  return "the interpreter ended";
}

void set_nonblocking(int fd) {
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
}

}  // namespace

std::string interpreter_wire::request_frame(std::uint32_t seq, std::string_view code,
                                            std::string_view stdin_data) {
  RequestHeader header{kRequestMagic, seq, static_cast<std::uint32_t>(code.size()),
                       static_cast<std::uint32_t>(stdin_data.size())};
  std::string frame(reinterpret_cast<const char*>(&header), sizeof header);
  frame.reserve(sizeof header + code.size() + stdin_data.size());
  frame.append(code);
  frame.append(stdin_data);
  return frame;
}

Interpreter* Sandbox::interpreter_for(Language language, const asio::any_io_executor& executor) {
  auto& slot = interpreters_[static_cast<std::size_t>(language)];
  if (slot) return slot.get();
  Pipe requests = make_pipe(), replies = make_pipe(), out = make_pipe(), err = make_pipe(),
       status = make_pipe();
  auto interpreter = std::make_unique<Interpreter>(executor, next_call_id_++);
  {
    std::lock_guard lock(mutex_);
    if (end_reason_ != EndReason::none) return nullptr;
    protocol::Header header{protocol::MessageType::start_interpreter, interpreter->id,
                            static_cast<protocol::Language>(language), 0};
    int fds[protocol::kInterpreterFdCount] = {requests.read.get(), replies.write.get(),
                                              out.write.get(), err.write.get(), status.write.get()};
    if (send_message(control_.get(), &header, sizeof header, fds) != 0) {
      end_locked(EndReason::failed, "the sandbox's supervisor does not answer");
      return nullptr;
    }
  }
  set_nonblocking(out.read.get());
  set_nonblocking(err.read.get());
  interpreter->requests.assign(requests.write.release());
  interpreter->replies.assign(replies.read.release());
  interpreter->stdout_pipe.assign(out.read.release());
  interpreter->stderr_pipe.assign(err.read.release());
  interpreter->status.assign(status.read.release());
  slot = std::move(interpreter);
  return slot.get();
}

asio::awaitable<std::string> Sandbox::interrupt(Interpreter& interpreter,
                                                std::uint64_t call_started_ns, std::uint32_t seq) {
  auto executor = co_await asio::this_coro::executor;
  protocol::InterruptRequest request{
      {protocol::MessageType::interrupt, interpreter.id, protocol::Language::python, 0},
      call_started_ns};
  if (!co_await ask_supervisor(&request, sizeof request,
                               static_cast<std::uint32_t>(protocol::MessageType::interrupted),
                               interpreter.id)) {
    end(EndReason::failed, "the sandbox's supervisor does not answer");
    co_return "the sandbox failed";
  }
  // The cell either ends by the interrupt or had just finished; both keep the state.
  asio::steady_timer grace(executor, kInterruptGrace);
  // Figures the call made so far are dropped.
  auto answer = co_await (read_reply(interpreter, seq, nullptr) || grace.async_wait(kTuple));
  auto reply = answer.index() == 0 ? std::get<0>(answer) : std::nullopt;
  if (reply && valid(*reply, seq)) co_return "";
  std::string why = "the interpreter did not stop within " +
                    std::to_string(kInterruptGrace.count()) + " s of the interrupt and was killed";
  if (answer.index() == 0 && !reply) {
    // It ended instead (the program had made SIGINT deadly): its init says how, at once.
    auto status = co_await read_status_promptly(interpreter.status);
    if (status && status->kind == protocol::StatusKind::exited)
      why = ended_text(status->value) + " at the interrupt";
  } else if (reply) {
    why = "the interpreter broke its protocol and was killed";
  }
  // Whatever is left of it (the init, processes of earlier calls) goes with its namespace.
  if (!co_await kill_call(interpreter.id))
    end(EndReason::failed, "the sandbox did not stop a killed interpreter");
  co_return why;
}

// One call in an interpreter: what it sends, what it waits on, and the figures it made.
struct Sandbox::InterpreterCall {
  InterpreterCall(Interpreter& to, std::uint32_t call_seq, std::uint64_t call_started_ns,
                  std::string request_frame, asio::steady_timer& call_deadline,
                  const CallControl* call_control)
      : interpreter(to),
        seq(call_seq),
        started_ns(call_started_ns),
        frame(std::move(request_frame)),
        deadline(call_deadline),
        control(call_control) {}

  Interpreter& interpreter;
  std::uint32_t seq;
  std::uint64_t started_ns;  // CLOCK_BOOTTIME: an interrupt kills what the call started since
  std::string frame;
  asio::steady_timer& deadline;  // its timeout, or a cancel (call_deadline)
  const CallControl* control;
  FigureCollector figures;
  bool pumps_done = false;
};

asio::awaitable<RunResult> Sandbox::run_in_interpreter(RunRequest request,
                                                       std::shared_ptr<CallControl> control) {
  auto self = shared_from_this();
  auto executor = co_await asio::this_coro::executor;
  auto started = Clock::now();
  const std::uint64_t started_ns = boottime_ns();
  RunResult result;
  result.persistent = true;

  const auto index = static_cast<std::size_t>(request.language);
  result.state_lost = co_await drop_ended_interpreter(index);
  Interpreter* interpreter = interpreter_for(request.language, executor);
  if (interpreter == nullptr) {
    result.outcome = RunOutcome::sandbox_ended;
    co_return finish(std::move(result), started, 0);
  }
  std::uint64_t oom_before = 0;
  {
    std::lock_guard lock(mutex_);
    oom_before = cgroups_->oom_kills();
  }
  const std::uint32_t seq = interpreter->next_seq++;
  auto deadline = call_deadline(executor, control.get(), request.timeout);
  InterpreterCall call{
      *interpreter, seq,
      started_ns,   interpreter_wire::request_frame(seq, request.code, request.stdin_data),
      *deadline,    control.get()};

  CallOutput output(limits_.output_bytes, request.on_output);
  bool replace =
      co_await ((pump(interpreter->stdout_pipe, output.out(), output.budget, &call.pumps_done) &&
                 pump(interpreter->stderr_pipe, output.err(), output.budget, &call.pumps_done)) &&
                settle_interpreter_call(call, result));
  if (control) control->disarm();
  // The driver flushed before it replied: what it printed is in the pipes now.
  drain(interpreter->stdout_pipe, output.out(), output.budget);
  drain(interpreter->stderr_pipe, output.err(), output.budget);
  if (replace) interpreters_[index].reset();

  output.move_to(result);
  result = finish(std::move(result), started, oom_before);
  if (result.oom_killed) result.state_lost = "the memory limit killed the interpreter";
  co_return result;
}

bool Sandbox::interpreter_ended(Interpreter& interpreter) {
  pollfd ended[2] = {{interpreter.status.native_handle(), POLLIN, 0},
                     {interpreter.replies.native_handle(), POLLIN, 0}};
  if (::poll(ended, 2, 0) <= 0) return false;
  return (ended[0].revents & (POLLIN | POLLHUP | POLLERR)) ||
         (ended[1].revents & (POLLHUP | POLLERR));
}

asio::awaitable<std::string> Sandbox::drop_ended_interpreter(std::size_t index) {
  // An interpreter that ended since the last call (a background thread's exit, the memory
  // limit) is replaced, and the model told. Its init writes the status just after reaping it,
  // so the replies pipe (which only the interpreter process holds) can say "ended" first: then
  // the status is on its way, and the call waits for it rather than hand its code to the dead.
  auto& previous = interpreters_[index];
  if (!previous || !interpreter_ended(*previous)) co_return "";
  auto status = co_await read_status_promptly(previous->status);
  // A program that closed the replies pipe itself broke the protocol: its namespace goes.
  if (!status && !co_await kill_call(previous->id))
    end(EndReason::failed, "the sandbox did not stop a killed interpreter");
  previous.reset();
  co_return (status && status->kind == protocol::StatusKind::exited ? ended_text(status->value)
                                                                    : "the interpreter ended") +
      " after the previous call";
}

asio::awaitable<bool> Sandbox::settle_interpreter_call(InterpreterCall& call, RunResult& result) {
  Interpreter& interpreter = call.interpreter;
  auto first = co_await (exchange(interpreter, call.frame, call.seq, call.figures) ||
                         call.deadline.async_wait(kTuple));
  bool replace = false;
  if (first.index() != 0) {
    result.outcome = cancelled(call.control) ? RunOutcome::cancelled : RunOutcome::timed_out;
    result.state_lost = co_await interrupt(interpreter, call.started_ns, call.seq);
    replace = !result.state_lost.empty();
  } else if (auto reply = std::get<0>(first); reply && valid(*reply, call.seq)) {
    // An interrupt the program sent itself is reported like a shell's Ctrl-C.
    result.exit_code = reply->kind == static_cast<std::uint32_t>(ReplyKind::interrupted)
                           ? 128 + SIGINT
                           : std::clamp(reply->value, 0, 255);
    result.images = call.figures.take_images();
    result.images_note = call.figures.note();
  } else if (reply) {
    replace = true;
    result.state_lost = "the interpreter broke its protocol and was killed";
    if (!co_await kill_call(interpreter.id))
      end(EndReason::failed, "the sandbox did not stop a killed interpreter");
  } else {
    replace = true;
    co_await settle_interpreter_gone(interpreter, result);
  }
  // The output pumps run until the call is settled.
  call.pumps_done = true;
  boost::system::error_code ignored;
  interpreter.stdout_pipe.cancel(ignored);
  interpreter.stderr_pipe.cancel(ignored);
  co_return replace;
}

asio::awaitable<void> Sandbox::settle_interpreter_gone(Interpreter& interpreter,
                                                       RunResult& result) {
  // The interpreter has gone: its init says how, at once (it writes when pid 2 ends).
  auto status = co_await read_status_promptly(interpreter.status);
  if (!status) {
    end(EndReason::failed, "the sandbox's processes were killed");
    result.outcome = RunOutcome::sandbox_ended;
  } else if (status->kind == protocol::StatusKind::spawn_failed) {
    end(EndReason::failed, spawn_failure_text(status->value, limits_.max_processes));
    result.outcome = RunOutcome::sandbox_ended;
  } else {
    take_wait_status(status->value, result.exit_code, result.signal);
    result.state_lost = ended_text(status->value);
  }
}

}  // namespace sandgate::sandbox
