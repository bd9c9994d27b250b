// Killing what is left in a sandbox's cgroups never signals a pid read from a listing: by the
// time it is signalled, that pid may name another process (the old code's v1 path did this).
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include "sandbox/cgroups/cgroups.hpp"
#include "sandbox/file_util.hpp"
#include "tests/support/skip.hpp"

using namespace sandgate::sandbox;

namespace {

pid_t start_sleeper() {
  pid_t pid = ::fork();
  if (pid == 0) {
    for (;;) ::pause();
  }
  return pid;
}

// Whether a child of ours still runs; reaps it if not.
bool running(pid_t pid, int* status = nullptr) {
  int ignored = 0;
  return ::waitpid(pid, status ? status : &ignored, WNOHANG) == 0;
}

Limits small_limits() {
  Limits l;
  l.memory_bytes = 64ull << 20;
  l.max_processes = 16;
  return l;
}

}  // namespace

TEST_CASE("a sandbox's leftover processes die through its kill cgroup, a stranger's pid is not hit",
          "[sandbox][cgroups]") {
  if (::geteuid() != 0) {
    sandgate::test::skip_test("root", "creating cgroups needs root");
    return;
  }
  auto layout = CgroupLayout::probe(256ull << 20);
  if (layout.killer.version == CgroupVersion::none) {
    layout.release();
    sandgate::test::skip_test("cgroup-kill", "no cgroup.kill and no v1 freezer on this host");
    return;
  }
  {
    CgroupSet set(layout, "kill-member", small_limits());
    pid_t member = start_sleeper();
    set.attach(member);
    set.remove();
    int status = 0;
    REQUIRE(::waitpid(member, &status, 0) == member);
    CHECK(WIFSIGNALED(status));
    CHECK(WTERMSIG(status) == SIGKILL);
  }
  if (layout.memory.version == CgroupVersion::v1) {
    // A process in the sandbox's v1 memory cgroup alone stands in for one that took the pid of
    // a sandbox process after it exited: listed in cgroup.procs, but not the sandbox's.
    CgroupSet set(layout, "kill-stranger", small_limits());
    pid_t stranger = start_sleeper();
    auto memory_dir = layout.memory.parent / "kill-stranger";
    write_file(memory_dir / "cgroup.procs", std::to_string(stranger));
    set.remove();
    CHECK(running(stranger));
    ::kill(stranger, SIGKILL);
    ::waitpid(stranger, nullptr, 0);
    ::rmdir(memory_dir.c_str());
  } else {
    WARN("not checked here: the stale-pid case needs a v1 memory hierarchy");
  }
  layout.release();
}
