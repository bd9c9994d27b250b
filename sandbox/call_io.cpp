#include "call_io.hpp"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/this_coro.hpp>
#include <cerrno>
#include <cstring>
#include <system_error>

namespace sandgate::sandbox {
namespace asio = boost::asio;

Pipe make_pipe() {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0)
    throw std::system_error(errno, std::generic_category(), "pipe2");
  return {UniqueFd(fds[0]), UniqueFd(fds[1])};
}

asio::awaitable<void> pump(Descriptor& from, OutputSink sink, OutputBudget& budget,
                           const bool* stop) {
  std::array<char, 64 * 1024> buffer;
  boost::system::error_code ec;
  from.non_blocking(true, ec);
  for (;;) {
    // Every read waits through the reactor, never speculatively: with a pipe that is never
    // empty (a flood), back-to-back immediate completions would starve the reactor, and with it
    // the timers that end the call.
    auto [wait_error] = co_await from.async_wait(Descriptor::wait_read, kTuple);
    if (wait_error || (stop != nullptr && *stop)) co_return;
    std::size_t n = from.read_some(asio::buffer(buffer), ec);
    if (n > 0) sink.take(budget, buffer.data(), n);
    if (ec == asio::error::would_block || ec == asio::error::try_again) continue;
    if (ec) co_return;  // EOF, or the pipe failed
  }
}

asio::awaitable<void> pump_figures(Descriptor& from, FigureCollector& figures, const bool* stop) {
  std::array<char, 64 * 1024> buffer;
  FrameReader reader(FigureLimits{}.max_bytes);
  bool broken = false;
  boost::system::error_code ec;
  from.non_blocking(true, ec);
  for (;;) {
    auto [wait_error] = co_await from.async_wait(Descriptor::wait_read, kTuple);
    if (wait_error || *stop) co_return;
    std::size_t n = from.read_some(asio::buffer(buffer), ec);
    for (std::size_t used = 0; used < n && !broken;) {
      used += reader.take(buffer.data() + used, n - used, 0, &figures);
      if (reader.take_other()) {
        figures.drop_malformed();
        broken = true;
      }
    }
    if (ec == asio::error::would_block || ec == asio::error::try_again) continue;
    if (ec) co_return;
  }
}

void drain(Descriptor& from, OutputSink sink, OutputBudget& budget) {
  std::array<char, 64 * 1024> buffer;
  // Bounded: a background writer could keep the pipe full for ever.
  for (int round = 0; round < 32 && from.is_open(); ++round) {
    ssize_t n = ::read(from.native_handle(), buffer.data(), buffer.size());
    if (n <= 0) return;
    sink.take(budget, buffer.data(), static_cast<std::size_t>(n));
  }
}

asio::awaitable<std::optional<protocol::Status>> read_status(Descriptor& from) {
  protocol::Status status{};
  auto [ec, n] = co_await asio::async_read(from, asio::buffer(&status, sizeof status), kTuple);
  if (ec || n != sizeof status) co_return std::nullopt;
  co_return status;
}

asio::awaitable<std::optional<protocol::Status>> read_status_promptly(Descriptor& from) {
  using namespace asio::experimental::awaitable_operators;
  asio::steady_timer bound(co_await asio::this_coro::executor, kKillGrace);
  auto told = co_await (read_status(from) || bound.async_wait(kTuple));
  co_return told.index() == 0 ? std::get<0>(told) : std::nullopt;
}

void take_wait_status(int wait_status, int& exit_code, int& signal) {
  if (WIFEXITED(wait_status)) {
    exit_code = WEXITSTATUS(wait_status);
  } else if (WIFSIGNALED(wait_status)) {
    signal = WTERMSIG(wait_status);
    exit_code = 128 + signal;
  }
}

std::shared_ptr<asio::steady_timer> call_deadline(const asio::any_io_executor& executor,
                                                  CallControl* control,
                                                  std::chrono::milliseconds timeout) {
  auto deadline = std::make_shared<asio::steady_timer>(executor, timeout);
  if (control) {
    // Moving the expiry to the past both ends a wait under way and makes a later one end at
    // once: a cancel is never lost between two waits.
    bool live = control->arm([executor, weak = std::weak_ptr(deadline)] {
      asio::post(executor, [weak] {
        if (auto t = weak.lock()) t->expires_at(asio::steady_timer::time_point::min());
      });
    });
    if (!live) deadline->expires_at(asio::steady_timer::time_point::min());
  }
  return deadline;
}

std::string spawn_failure_text(int error, std::uint32_t max_processes) {
  if (error == EAGAIN)
    return "could not start the program: the sandbox's process limit (" +
           std::to_string(max_processes) +
           ") is reached; processes left running by earlier calls count too";
  return std::string("could not start the program: ") + std::strerror(error);
}

}  // namespace sandgate::sandbox
