#pragma once
// The gateway's side of a call's pipes, shared by fresh processes and persistent interpreters.
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "call_control.hpp"
#include "common/unique_fd.hpp"
#include "figure_frames.hpp"
#include "output_budget.hpp"
#include "protocol.hpp"

namespace sandgate::sandbox {

using Descriptor = boost::asio::posix::stream_descriptor;
inline constexpr auto kTuple = boost::asio::as_tuple(boost::asio::use_awaitable);

// After a kill, the call's init must be gone within this; otherwise the sandbox is broken.
inline constexpr auto kKillGrace = std::chrono::seconds(5);

struct Pipe {
  UniqueFd read, write;
};
Pipe make_pipe();  // close-on-exec; throws std::system_error

// Reads until EOF or an error (a cancel included), keeping what the budget allows. With `stop`,
// also returns once *stop is true when it wakes: a cancel alone can miss a wait that had already
// completed, and the pump would then wait again, for ever, on a pipe that stays open.
boost::asio::awaitable<void> pump(Descriptor& from, OutputSink sink, OutputBudget& budget,
                                  const bool* stop = nullptr);

// Reads a fresh Python program's figure channel until EOF, like pump: image frames go to
// `figures`; after anything else the channel is malformed and the rest is read and dropped.
boost::asio::awaitable<void> pump_figures(Descriptor& from, FigureCollector& figures,
                                          const bool* stop);

// Reads what a (non-blocking) pipe holds right now, without waiting: the output an interpreter
// wrote before it replied, which the pump may not have been woken for yet.
void drain(Descriptor& from, OutputSink sink, OutputBudget& budget);

boost::asio::awaitable<std::optional<protocol::Status>> read_status(Descriptor& from);
// The same, for an init that writes at once or never: nullopt after kKillGrace.
boost::asio::awaitable<std::optional<protocol::Status>> read_status_promptly(Descriptor& from);

// A program's wait status as a result's exit code (128 + signal, the shell's convention) and
// signal; exit_code stays -1 when it neither exited nor was killed.
void take_wait_status(int wait_status, int& exit_code, int& signal);

// A call's deadline: a timer that fires `timeout` from now, or at once when `control` cancels
// the call (before it began or while it runs). Which of the two it was: `cancelled(control)`.
// One timer for both: a call waits on two events, not three, and that wait's parallel group
// is one operation smaller.
std::shared_ptr<boost::asio::steady_timer> call_deadline(
    const boost::asio::any_io_executor& executor, CallControl* control,
    std::chrono::milliseconds timeout);
inline bool cancelled(const CallControl* control) {
  return control != nullptr && control->cancelled();
}

// The words for a program that could not be started (errno from the call's init).
std::string spawn_failure_text(int error, std::uint32_t max_processes);

}  // namespace sandgate::sandbox
