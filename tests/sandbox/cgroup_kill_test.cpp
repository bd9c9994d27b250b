// Killing what is left in a sandbox's cgroups never signals a pid read from a listing: by the
// time it is signalled, that pid may name another process (the old code's v1 path did this).
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <thread>

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
    // Pure cgroup v2 (where the product is deployed): the kill is the set's own cgroup.kill, so
    // no pid is read and none can go stale; what must hold is that it reaches that cgroup only.
    // A process in a sibling set (another sandbox's, as far as this one knows) survives it.
    CgroupSet other(layout, "kill-bystander", small_limits());
    pid_t bystander = start_sleeper();
    other.attach(bystander);
    {
      CgroupSet set(layout, "kill-stranger", small_limits());
      pid_t member = start_sleeper();
      set.attach(member);
      set.remove();
      REQUIRE(::waitpid(member, nullptr, 0) == member);
    }
    CHECK(running(bystander));
    other.remove();  // its own kill ends the bystander
    int status = 0;
    REQUIRE(::waitpid(bystander, &status, 0) == bystander);
    CHECK(WIFSIGNALED(status));
  }
  layout.release();
}

TEST_CASE("where cgroup.kill is missing, the v1 freezer kills a sandbox's leftover processes",
          "[sandbox][cgroups]") {
  if (::geteuid() != 0) {
    sandgate::test::skip_test("root", "creating cgroups needs root");
    return;
  }
  const std::filesystem::path freezer_root = "/sys/fs/cgroup/freezer";
  if (!std::filesystem::exists(freezer_root / "cgroup.procs")) {
    sandgate::test::skip_test("cgroup-v1-freezer", "no v1 freezer hierarchy on this host");
    return;
  }
  auto layout = CgroupLayout::probe(256ull << 20);
  // The layout a kernel before 5.14 gets: the freezer as the killer, in an instance directory
  // named as the probe named its own (so a crash leaves nothing the next sweep misses).
  auto instance = freezer_root / layout.memory.parent.filename();
  REQUIRE(layout.memory.version != CgroupVersion::none);
  REQUIRE(std::filesystem::create_directory(instance));
  const ControllerPlace probed_killer = layout.killer;  // released below with the others
  layout.killer = {CgroupVersion::v1, instance};
  pid_t member = start_sleeper();
  {
    CgroupSet set(layout, "kill-frozen", small_limits());
    set.attach(member);
    REQUIRE(read_file(instance / "kill-frozen" / "cgroup.procs").value_or("") ==
            std::to_string(member) + "\n");
    set.remove();
  }
  // Bounded: a freezer that kills nothing must fail this test, not hang it.
  int status = 0;
  bool ended = false;
  for (int i = 0; i < 500 && !ended; ++i) {
    ended = !running(member, &status);
    if (!ended) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (!ended) {
    ::kill(member, SIGKILL);
    ::waitpid(member, nullptr, 0);
  }
  CHECK(ended);
  CHECK(WIFSIGNALED(status));
  CHECK(WTERMSIG(status) == SIGKILL);
  CHECK_FALSE(std::filesystem::exists(instance / "kill-frozen"));
  ::rmdir(instance.c_str());
  layout.killer = probed_killer;
  layout.release();
}
