// The gateway's reading of a new supervisor's first words. Plain forked children stand in for
// supervisors, so these run without isolation.
#include "sandbox/setup_report.hpp"

#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>
#include <catch2/catch.hpp>
#include <chrono>
#include <functional>

#include "sandbox/fd_passing.hpp"
#include "sandbox/protocol.hpp"

namespace {

using sandgate::UniqueFd;
using sandgate::sandbox::SpawnedSupervisor;
namespace protocol = sandgate::sandbox::protocol;

// Forks a child that runs `act` on its end of the channel, then reads its report.
std::string report_of(const std::function<void(int)>& act, pid_t* pid_after = nullptr,
                      std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
  int pair[2];
  REQUIRE(::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) == 0);
  pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::close(pair[0]);
    act(pair[1]);
    ::_exit(0);
  }
  ::close(pair[1]);
  SpawnedSupervisor spawned;
  spawned.pid = pid;
  spawned.control = UniqueFd(pair[0]);
  boost::asio::io_context io;
  auto report = boost::asio::co_spawn(io, sandgate::sandbox::await_setup_report(spawned, timeout),
                                      boost::asio::use_future);
  io.run();
  if (pid_after) *pid_after = spawned.pid;
  if (spawned.pid > 0) {
    ::kill(spawned.pid, SIGKILL);
    ::waitpid(spawned.pid, nullptr, 0);
  }
  return report.get();
}

void say(int fd, protocol::MessageType type, const std::string& text) {
  protocol::Header h{type, 0, protocol::Language::python, 0};
  std::string message(reinterpret_cast<const char*>(&h), sizeof h);
  message += text;
  sandgate::sandbox::send_message(fd, message.data(), message.size());
}

}  // namespace

TEST_CASE("setup report: ready is an empty report", "[sandbox][setup]") {
  CHECK(report_of([](int fd) {
          say(fd, protocol::MessageType::ready, "");
          ::pause();
        }) == "");
}

TEST_CASE("setup report: the supervisor's own failure text is passed on", "[sandbox][setup]") {
  CHECK(report_of([](int fd) { say(fd, protocol::MessageType::failed, "mount /work: ENOSPC"); }) ==
        "mount /work: ENOSPC");
}

TEST_CASE("setup report: a mount refused by an LSM (EACCES) names the AppArmor profile",
          "[sandbox][setup]") {
  auto report = report_of([](int fd) {
    say(fd, protocol::MessageType::failed, "remount / read-only: Permission denied");
  });
  CHECK(report.rfind("remount / read-only: Permission denied (an LSM refused", 0) == 0);
  CHECK(report.find("deploy/k8s/security-profiles/sandgate.apparmor") != std::string::npos);
  // Not a mount step, or not EACCES: passed on as it is.
  CHECK(sandgate::sandbox::explain_setup_failure("write /etc/passwd: Permission denied") ==
        "write /etc/passwd: Permission denied");
  CHECK(sandgate::sandbox::explain_setup_failure("mount /proc: Operation not permitted") ==
        "mount /proc: Operation not permitted");
}

TEST_CASE("setup report: a supervisor that dies says how, and is reaped", "[sandbox][setup]") {
  pid_t after = 0;
  CHECK(report_of([](int) { ::_exit(125); }, &after) ==
        "the sandbox's supervisor exited during setup (exit 125: could not exec the supervisor)");
  CHECK(after == -1);
  // Descriptors it could not close: the sandbox must not start, and the report says why.
  CHECK(report_of([](int) { ::_exit(119); }).find("could not close the gateway's descriptors") !=
        std::string::npos);
  CHECK(report_of([](int) { ::raise(SIGKILL); }) ==
        "the sandbox's supervisor exited during setup (killed by SIGKILL)");
}

TEST_CASE("setup report: a message too short to be one is malformed", "[sandbox][setup]") {
  CHECK(report_of([](int fd) {
          ::send(fd, "x", 1, 0);
          ::pause();
        }) == "the sandbox's supervisor sent a malformed message");
}

TEST_CASE("setup report: a supervisor silent past the start timeout is a report, not a hang",
          "[sandbox][setup]") {
  pid_t after = 0;
  CHECK(report_of([](int) { ::pause(); }, &after, std::chrono::seconds(1)) ==
        "the sandbox did not start within 1 s (the host is short of memory or CPU)");
  CHECK(after > 0);  // still running: the caller ends it with its half-built sandbox
}
