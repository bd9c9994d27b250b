// The gateway's descriptors never reach a program: not where close_range works, and not where
// the kernel or a container's seccomp profile refuses it (then the sandbox falls back to
// /proc/self/fd, or does not start).
#include <fcntl.h>
#include <netinet/in.h>
#include <seccomp.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cerrno>
#include <sstream>
#include <string>

#include "forked_scenario.hpp"
#include "sandbox_fixture.hpp"

using sandgate::sandbox::Language;

namespace {

// What the test takes away, as a container runtime's seccomp profile or an older kernel would.
enum class Refused { nothing, close_range, close_range_and_listing };

// A filter answering ENOSYS to close_range (and, for the last resort, to getdents, so that
// /proc/self/fd cannot be listed); everything else runs. Inherited by everything this process
// starts: the clone child, the supervisor, programs.
std::string refuse(Refused what) {
  if (what == Refused::nothing) return "";
  scmp_filter_ctx ctx = ::seccomp_init(SCMP_ACT_ALLOW);
  if (ctx == nullptr) return "seccomp_init failed";
  // Root needs no no_new_privs for a filter; without root it is the only way.
  ::seccomp_attr_set(ctx, SCMP_FLTATR_CTL_NNP, ::geteuid() == 0 ? 0 : 1);
  int rc = ::seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(close_range), 0);
  if (rc == 0 && what == Refused::close_range_and_listing) {
    rc = ::seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(getdents64), 0);
    if (rc == 0) rc = ::seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(getdents), 0);
  }
  if (rc == 0) rc = ::seccomp_load(ctx);
  ::seccomp_release(ctx);
  if (rc != 0) return "seccomp filter not loaded: " + std::to_string(rc);
  if (::syscall(SYS_close_range, 1000, 1000, 0) == 0 || errno != ENOSYS)
    return "close_range still works under the filter";
  return "";
}

// The kind of descriptors a gateway holds, opened without close-on-exec (the mistake the
// sandbox must survive): a listening socket and a pipe. Above 3, which the supervisor's
// control socket takes over in any case.
void open_leaky_descriptors() {
  int listener = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(listener, reinterpret_cast<sockaddr*>(&a), sizeof a);
  ::listen(listener, 4);
  ::fcntl(listener, F_DUPFD, 20);  // F_DUPFD: the copy is not close-on-exec either
  ::close(listener);
  int p[2];
  if (::pipe(p) != 0) ::_exit(3);
}

// Lists the program's own descriptors: the numbers, then where each one beyond stdio leads.
constexpr const char* kListDescriptors =
    "import os\n"
    "fds = sorted(os.listdir('/proc/self/fd'), key=int)\n"
    "print(' '.join(fds))\n"
    "for fd in fds[3:]:\n"
    "  try: print(fd, os.readlink('/proc/self/fd/' + fd))\n"
    "  except OSError as e: print(fd, e)\n";

// The same without listing a directory (getdents is refused then): bash tries each number.
// Bash itself holds its script open on 255.
constexpr const char* kProbeDescriptors =
    "open=()\n"
    "for fd in $(seq 0 1023); do [ -e /proc/self/fd/$fd ] && open+=($fd); done\n"
    "echo \"${open[*]}\"\n"
    "for fd in \"${open[@]:3}\"; do echo $fd $(readlink /proc/self/fd/$fd); done\n";

// In the persistent interpreter: its own descriptors (stdio, the listing, and its channel to the
// gateway, moved to 1000 and 1001), then those of a process it starts.
const std::string kListInterpreterDescriptors = std::string(kListDescriptors) +
                                                "import subprocess, sys\n"
                                                "sys.stdout.flush()\n"
                                                "done = subprocess.run([sys.executable, '-c', '''" +
                                                kListDescriptors + "'''])\n";

std::string program_descriptors(Refused refused, bool interpreter = false) {
  if (auto problem = refuse(refused); !problem.empty()) return "SETUP: " + problem;
  open_leaky_descriptors();
  // Descriptors are the point here, not limits: a second gateway in the test process's cgroup
  // (a Delegate=yes unit's) could not have cgroups of its own, and would otherwise be refused.
  auto config = sandgate::test::SandboxFixture::default_config();
  config.accept_no_cgroups = true;
  sandgate::test::SandboxFixture f(config);
  if (!f.host().isolation().usable()) return "SKIP: " + f.host().isolation().problem;
  f.fresh = !interpreter;
  auto sb = f.create();
  auto r = refused == Refused::close_range_and_listing
               ? f.run(sb, Language::bash, kProbeDescriptors)
               : f.run(sb, Language::python,
                       interpreter ? kListInterpreterDescriptors : kListDescriptors);
  return r.stdout_text + r.stderr_text + r.failure;
}

// 0-2 are the program's stdio; beyond them, only what the program opened itself.
void check_only_stdio(Refused refused, const std::string& expected) {
  auto answer = sandgate::test::run_forked([refused] { return program_descriptors(refused); });
  if (answer.rfind("SKIP: ", 0) == 0) {
    sandgate::test::skip_test("sandboxes", "sandboxes unavailable here: " + answer);
    return;
  }
  INFO(answer);
  REQUIRE(answer.rfind("SETUP: ", 0) != 0);
  CHECK(answer.substr(0, answer.find('\n')) == expected);
}

}  // namespace

TEST_CASE("a program holds only its stdio", "[sandbox][isolation][descriptors]") {
  // 3: the directory it lists; 1000: a Python program's figure channel (close-on-exec), which
  // its sitecustomize moved there from 3.
  check_only_stdio(Refused::nothing, "0 1 2 3 1000");
}

TEST_CASE("an interpreter holds its stdio and channel, and what it starts only its stdio",
          "[sandbox][isolation][descriptors]") {
  auto answer = sandgate::test::run_forked(
      [] { return program_descriptors(Refused::nothing, /*interpreter=*/true); });
  if (answer.rfind("SKIP: ", 0) == 0) {
    sandgate::test::skip_test("sandboxes", "sandboxes unavailable here: " + answer);
    return;
  }
  INFO(answer);
  std::istringstream lines(answer);
  std::string own, line, started;
  std::getline(lines, own);
  CHECK(own == "0 1 2 3 1000 1001");
  // The subprocess's own listing follows the interpreter's lines about fds 3, 1000 and 1001.
  while (std::getline(lines, line))
    if (started.empty() && line.rfind("0 1 2", 0) == 0) started = line;
  CHECK(started == "0 1 2 3");
  CHECK(answer.find("1000 pipe:") != std::string::npos);
  CHECK(answer.find("1001 pipe:") != std::string::npos);
}

TEST_CASE("a program holds only its stdio even where close_range is refused",
          "[sandbox][isolation][descriptors][refusing-host]") {
  check_only_stdio(Refused::close_range, "0 1 2 3 1000");
}

TEST_CASE("a program holds only its stdio even where close_range and getdents are refused",
          "[sandbox][isolation][descriptors][refusing-host]") {
  check_only_stdio(Refused::close_range_and_listing, "0 1 2 255");
}
