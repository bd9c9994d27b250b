#pragma once
// A call's output, live, for a request that asked for progress: the program's stdout and stderr
// go out as they are written, in the `message` of notifications/progress.
//
// Bounded whatever the program does: at most one notification per kMinGap (plus the periodic
// "running for N s" and one last one just before the result), each message at most
// kMessageBytes of valid UTF-8 (a character split across reads waits for its end). What does not
// fit before the next notification is left out and counted: "[… N bytes not shown live]". The
// result still carries the whole (capped) output.
//
// Marking: each stderr line starts with kStderrMark ("[stderr] "), again at the start of a
// message that continues a stderr line; a switch from one stream to the other in the middle of
// a line starts a new line. Stdout is shown as written, made safe (terminal_safe.hpp: no escape
// sequences, carriage returns or bidi overrides) and with a backslash before a line that starts
// with '[', so that no program line passes for the gateway's marks.
//
// Progress values: milliseconds since the call began, strictly increasing (+1 on a tie), one
// counter for the output and the "running for N s" ticks, so no notification is dropped for
// not increasing.
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "sandbox/output_budget.hpp"
#include "tool.hpp"

namespace sandgate::server {

class LiveOutput : public std::enable_shared_from_this<LiveOutput> {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr std::size_t kMessageBytes = 4096;
  static constexpr auto kMinGap = std::chrono::milliseconds(250);
  // A message waits this long after the output that starts it: an unbuffered print() makes
  // several writes (`print('line', i)`: four), which then go out together.
  static constexpr auto kGather = std::chrono::milliseconds(30);
  static constexpr std::string_view kStderrMark = "[stderr] ";

  // `executor`: where the pacing timer runs.
  LiveOutput(std::shared_ptr<CallEvents> events, boost::asio::any_io_executor executor);

  // For RunRequest::on_output: keeps this alive while the request holds it.
  sandbox::OutputObserver observer();
  // From any thread: output as the sandbox reads it.
  void observe(sandbox::OutputStream which, std::string_view bytes);
  // "running for N s", numbered with the output.
  void tick(std::string message);
  // Sends what is waiting, then ignores everything: call once the run is over, before the
  // result is sent.
  void finish();

 private:
  // Room left for text in the waiting message (the rest of kMessageBytes is kept for the
  // "not shown" line).
  std::size_t room_locked() const;
  void append_locked(sandbox::OutputStream which, std::string_view text);
  void schedule_locked();
  void send_locked();
  double next_progress_locked();

  std::shared_ptr<CallEvents> events_;
  boost::asio::steady_timer timer_;  // touched only by what schedule_locked posts
  const Clock::time_point started_;

  std::mutex mutex_;
  std::string text_;           // the next message's text, valid UTF-8
  std::size_t not_shown_ = 0;  // bytes left out since the last message
  std::string partial_[2];     // per stream: a character's first bytes, waiting for the rest
  bool after_cr_[2] = {false, false};  // per stream: its text so far ended with "\r"
  bool line_start_ = true;
  sandbox::OutputStream last_stream_ = sandbox::OutputStream::out;
  bool scheduled_ = false;
  bool finished_ = false;
  Clock::time_point last_sent_{};
  double last_progress_ = 0;
};

}  // namespace sandgate::server
