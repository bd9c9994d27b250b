#include "setup_report.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <cerrno>
#include <chrono>
#include <cstring>

#include "fd_passing.hpp"
#include "protocol.hpp"

namespace sandgate::sandbox {
namespace asio = boost::asio;
using namespace asio::experimental::awaitable_operators;

namespace {

constexpr auto kTuple = asio::as_tuple(asio::use_awaitable);

// The supervisor closed its channel without a word: reap it and say how it ended. Exit codes
// 119-127 are spawn_supervisor's steps before exec.
std::string describe_exit(pid_t pid) {
  int status = 0;
  pid_t reaped = 0;
  // Closing the channel is the last thing a dying process does; its exit follows at once.
  for (int attempt = 0; attempt < 100 && reaped == 0; ++attempt) {
    reaped = ::waitpid(pid, &status, WNOHANG);
    if (reaped == 0) ::usleep(10'000);
  }
  if (reaped != pid) {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, &status, 0);
    return "it closed its channel but did not exit, and was killed";
  }
  if (WIFSIGNALED(status)) return std::string("killed by SIG") + ::sigabbrev_np(WTERMSIG(status));
  int code = WEXITSTATUS(status);
  switch (code) {
    case 119:
      return "exit 119: could not close the gateway's descriptors (close_range, a listing of "
             "/proc/self/fd and a close of every number below RLIMIT_NOFILE all failed), so it "
             "refused to start";
    case 120:
      return "exit 120: not released by the gateway";
    case 121:
    case 122:
    case 123:
      return "exit " + std::to_string(code) + ": could not take its ids";
    case 124:
    case 126:
      return "exit " + std::to_string(code) + ": could not set up its descriptors";
    case 125:
      return "exit 125: could not exec the supervisor";
    case 127:
      return "exit 127: could not set its oom_score_adj";
    default:
      return "exit " + std::to_string(code);
  }
}

}  // namespace

asio::awaitable<std::string> await_setup_report(SpawnedSupervisor& spawned,
                                                std::chrono::milliseconds timeout) {
  auto executor = co_await asio::this_coro::executor;
  // A close-on-exec copy: asio owns (and closes) it; a plain dup() would leak into any exec.
  asio::posix::stream_descriptor watch(executor,
                                       ::fcntl(spawned.control.get(), F_DUPFD_CLOEXEC, 0));
  asio::steady_timer timer(executor, timeout);
  for (;;) {
    auto which = co_await (watch.async_wait(asio::posix::stream_descriptor::wait_read, kTuple) ||
                           timer.async_wait(kTuple));
    if (which.index() == 1)
      co_return "the sandbox did not start within " +
          std::to_string(std::chrono::duration_cast<std::chrono::seconds>(timeout).count()) +
          " s (the host is short of memory or CPU)";
    if (auto [ec] = std::get<0>(which); ec)
      co_return "could not wait for the sandbox's supervisor: " + ec.message();
    auto msg = receive_message(spawned.control.get(), 4096, 2, true);
    if (msg.error == EAGAIN) continue;  // readable turned out to be nothing: wait on
    if (msg.error != 0)
      co_return std::string("could not read the supervisor's report: ") + std::strerror(msg.error);
    protocol::Header header{};
    if (!msg.closed && msg.data.size() < sizeof header)
      co_return "the sandbox's supervisor sent a malformed message";
    if (msg.data.size() < sizeof header) {
      std::string how = describe_exit(spawned.pid);
      spawned.pid = -1;
      co_return "the sandbox's supervisor exited during setup (" + how + ")";
    }
    std::memcpy(&header, msg.data.data(), sizeof header);
    if (header.type == protocol::MessageType::failed)
      co_return explain_setup_failure(msg.data.substr(sizeof header));
    if (header.type != protocol::MessageType::ready)
      co_return "the sandbox's supervisor sent an unexpected message";
    // A sandbox with egress reports with its proxy's listening socket attached, then one with
    // a tool channel with that socket.
    std::size_t next = 0;
    if (spawned.reports_egress && next < msg.fds.size())
      spawned.egress_listener = std::move(msg.fds[next++]);
    if (spawned.reports_tool_channel && next < msg.fds.size())
      spawned.tool_listener = std::move(msg.fds[next++]);
    co_return "";
  }
}

std::string explain_setup_failure(std::string failure) {
  // rootfs.cpp's steps, as its errors name them.
  static const char* const kMountSteps[] = {
      "mount ", "bind ", "remount ", "mask ", "make / private", "pivot_root", "detach old root"};
  if (failure.find(std::strerror(EACCES)) == std::string::npos) return failure;
  for (const char* step : kMountSteps)
    if (failure.rfind(step, 0) == 0)
      return failure +
             " (an LSM refused a mount in the sandbox's own mount namespace: the container's "
             "AppArmor profile must allow the sandbox's mounts; use "
             "deploy/k8s/security-profiles/sandgate.apparmor, appArmorProfile {type: Localhost, "
             "localhostProfile: sandgate})";
  return failure;
}

}  // namespace sandgate::sandbox
