// A gateway that is not root (the Dockerfile's `USER sandgate`, a systemd unit with User=) runs
// sandboxes too: one host uid for everything, the namespaces still apart, and the supervisor
// safe from a program that shares its uid.
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include "forked_scenario.hpp"
#include "sandbox_fixture.hpp"

using sandgate::sandbox::Language;

namespace {

constexpr uid_t kNobody = 65534;

std::string unprivileged_run() {
  // The whole process, not one thread: raw system calls (glibc's wrappers would do the same).
  if (::syscall(SYS_setgroups, 0, nullptr) != 0 ||
      ::syscall(SYS_setresgid, kNobody, kNobody, kNobody) != 0 ||
      ::syscall(SYS_setresuid, kNobody, kNobody, kNobody) != 0)
    return "SETUP: could not become nobody";
  // A uid change leaves a process non-dumpable (its /proc files root's); a gateway started as
  // an unprivileged user is dumpable, and writes its sandboxes' id maps as their owner.
  ::prctl(PR_SET_DUMPABLE, 1);
  auto config = sandgate::test::SandboxFixture::default_config();
  config.accept_no_cgroups = true;  // nobody may not create cgroups here
  sandgate::test::SandboxFixture f(config);
  if (f.host().isolation().privileged) return "SETUP: still privileged";
  if (!f.host().isolation().usable()) return "SKIP: " + f.host().isolation().problem;
  auto sb = f.create();
  // A program shares the supervisor's uid here: it tries to plant a symlink where the next
  // call's code goes, and to find its supervisor.
  auto first = f.run(sb, Language::bash,
                     "ln -s /work/target /code/cell-2.sh 2>/dev/null; echo first\n"
                     "for p in /proc/[0-9]*; do grep -qa sandgate $p/cmdline 2>/dev/null && "
                     "echo SEEN $p; done; true");
  auto second = f.run(sb, Language::python, "import os\nprint('second', os.listdir('/work'))");
  return first.stdout_text + first.stderr_text + first.failure + second.stdout_text +
         second.stderr_text + second.failure;
}

}  // namespace

TEST_CASE("an unprivileged gateway runs sandboxes", "[sandbox][unprivileged]") {
  if (::geteuid() != 0) {
    sandgate::test::skip_test("root",
                              "the test becomes an unprivileged user, which needs root first");
    return;
  }
  auto answer = sandgate::test::run_forked(unprivileged_run);
  if (answer.rfind("SKIP: ", 0) == 0) {
    sandgate::test::skip_test("sandboxes", "sandboxes unavailable here: " + answer);
    return;
  }
  INFO(answer);
  CHECK(answer == "first\nsecond []\n");
}
