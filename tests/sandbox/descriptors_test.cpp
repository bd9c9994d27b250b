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

#include "forked_scenario.hpp"
#include "sandbox_fixture.hpp"

using sandgate::sandbox::Language;

namespace {

// As a container runtime's profile would: close_range answers ENOSYS, everything else runs.
// Inherited by everything this process starts: the clone child, the supervisor, programs.
std::string refuse_close_range() {
  scmp_filter_ctx ctx = ::seccomp_init(SCMP_ACT_ALLOW);
  if (ctx == nullptr) return "seccomp_init failed";
  // Root needs no no_new_privs for a filter; without root it is the only way.
  ::seccomp_attr_set(ctx, SCMP_FLTATR_CTL_NNP, ::geteuid() == 0 ? 0 : 1);
  int rc = ::seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(close_range), 0);
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

std::string program_descriptors(bool refuse) {
  if (refuse)
    if (auto problem = refuse_close_range(); !problem.empty()) return "SETUP: " + problem;
  open_leaky_descriptors();
  sandgate::test::SandboxFixture f;
  if (!f.host().isolation().usable()) return "SKIP: " + f.host().isolation().problem;
  auto sb = f.create();
  auto r = f.run(sb, Language::python, kListDescriptors);
  return r.stdout_text + r.stderr_text + r.failure;
}

void check_only_stdio(bool refuse) {
  auto answer = sandgate::test::run_forked([refuse] { return program_descriptors(refuse); });
  if (answer.rfind("SKIP: ", 0) == 0) {
    WARN("SKIPPED: sandboxes unavailable here: " << answer);
    return;
  }
  INFO(answer);
  REQUIRE(answer.rfind("SETUP: ", 0) != 0);
  // 0-2 are the program's stdio; 3 is the directory it is listing.
  CHECK(answer.substr(0, answer.find('\n')) == "0 1 2 3");
}

}  // namespace

TEST_CASE("a program holds only its stdio", "[sandbox][isolation][descriptors]") {
  check_only_stdio(false);
}

TEST_CASE("a program holds only its stdio even where close_range is refused",
          "[sandbox][isolation][descriptors]") {
  check_only_stdio(true);
}
