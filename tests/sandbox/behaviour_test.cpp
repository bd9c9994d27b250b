// Normal work in a sandbox, spend cap, lifetime, failures and the absence of leftovers.
#include <dirent.h>
#include <signal.h>
#include <sys/wait.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include "../support/host_probe.hpp"
#include "sandbox/cgroups/cgroups.hpp"
#include "sandbox_fixture.hpp"

using sandgate::sandbox::EndReason;
using sandgate::sandbox::Language;
using sandgate::sandbox::RunOutcome;

namespace {

bool has_children() {
  return ::waitpid(-1, nullptr, WNOHANG) == 0;
}

// Mounts of this process's namespace at or below /tmp, where a sandbox builds its root (in a
// namespace of its own): other processes' mounts elsewhere on a busy host do not count.
std::size_t mounts_under_tmp() {
  std::ifstream table("/proc/self/mountinfo");
  std::size_t n = 0;
  for (std::string line; std::getline(table, line);) {
    std::istringstream fields(line);
    std::string id, parent, device, root, point;
    fields >> id >> parent >> device >> root >> point;
    if (point == "/tmp" || point.rfind("/tmp/", 0) == 0) ++n;
  }
  return n;
}

}  // namespace

TEST_CASE("files in /work persist across calls, and stdin is fed", "[sandbox]") {
  sandgate::test::SandboxFixture f;
  if (!f.require_isolation()) return;
  auto sb = f.create();
  f.run(sb, Language::python, "open('/work/data.txt', 'w').write('kept')");
  auto r = f.run(sb, Language::javascript,
                 "console.log(require('fs').readFileSync('/work/data.txt', 'utf8'))");
  CHECK(r.stdout_text == "kept\n");
  auto in =
      f.run(sb, Language::bash, "wc -c; pwd", std::chrono::seconds(10), std::string(100000, 'a'));
  CHECK(in.stdout_text == "100000\n/work\n");
}

TEST_CASE("numpy imports when the host has it", "[sandbox]") {
  sandgate::test::SandboxFixture f;
  if (!f.require_isolation()) return;
  if (!std::filesystem::exists("/usr/lib/python3/dist-packages/numpy")) {
    sandgate::test::skip_test("numpy", "python3-numpy is not installed");
    return;
  }
  auto sb = f.create();
  auto r = f.run(sb, Language::python, "import numpy as np\nprint(int(np.arange(10).sum()))");
  CHECK(r.stderr_text == "");
  CHECK(r.stdout_text == "45\n");
}

TEST_CASE("invalid UTF-8 output is replaced", "[sandbox]") {
  sandgate::test::SandboxFixture f;
  if (!f.require_isolation()) return;
  auto sb = f.create();
  auto r = f.run(sb, Language::bash, "printf 'ok\\xff\\xfe!'");
  // Two invalid bytes, two replacement characters (one per maximal invalid subpart).
  CHECK(r.stdout_text == "ok\xEF\xBF\xBD\xEF\xBF\xBD!");
}

TEST_CASE("the spend cap ends a busy sandbox mid-call", "[sandbox][spend]") {
  auto config = sandgate::test::SandboxFixture::default_config();
  config.limits.spend_cap_usd = 0.00001;  // about 0.7 s of one vCPU at list price
  sandgate::test::SandboxFixture f(config);
  if (!f.require_isolation()) return;
  auto sb = f.create();
  auto r = f.run(sb, Language::python, "while True: pass", std::chrono::seconds(30));
  CHECK(r.outcome == RunOutcome::sandbox_ended);
  CHECK(r.end_reason == EndReason::spend_cap);
  CHECK(r.spend_usd >= 0.00001);
  CHECK(sb->ended());
  CHECK(sandgate::test::sandbox_cgroups_of(::getpid()) == 0);
}

TEST_CASE("spend is metered and the cap applied at the end of a call, not a timer later",
          "[sandbox][spend]") {
  auto config = sandgate::test::SandboxFixture::default_config();
  // The timer never ticks during the test: only the call's end can see the spend.
  config.meter_interval = std::chrono::minutes(10);
  config.limits.spend_cap_usd = 0.000005;  // about 0.36 s of one vCPU at list price
  sandgate::test::SandboxFixture f(config);
  if (!f.require_isolation()) return;
  auto sb = f.create();
  // Burns about 1 s of CPU and ends by itself, well before any timer.
  auto r = f.run(sb, Language::python,
                 "import time\nt = time.process_time()\nwhile time.process_time() - t < 1: pass\n"
                 "print('done')",
                 std::chrono::seconds(30));
  // The call's own result stands, and says the cap was reached with it.
  CHECK(r.outcome == RunOutcome::completed);
  CHECK(r.stdout_text == "done\n");
  CHECK(r.end_reason == EndReason::spend_cap);
  CHECK(r.spend_usd >= 0.000005);
  CHECK(sb->ended());
  CHECK(sandgate::test::sandbox_cgroups_of(::getpid()) == 0);
  // Nothing more runs there.
  CHECK(f.run(sb, Language::bash, "echo again").outcome == RunOutcome::sandbox_ended);
}

TEST_CASE("memory held between two samples is charged by its peak", "[sandbox][spend]") {
  auto config = sandgate::test::SandboxFixture::default_config();
  config.meter_interval = std::chrono::minutes(10);
  config.prices.usd_per_vcpu_hour = 1e-12;  // spend is (almost) all memory
  config.prices.usd_per_gib_hour = 3600;    // $1 per GiB-second
  config.limits.spend_cap_usd = 1e9;
  // Room for the 200 MiB beside the supervisor, which shares the sandbox's memory cgroup and,
  // in the ASan build, carries the sanitizer's own memory (256 MiB was OOM-killed there).
  config.limits.memory_bytes = 512ull << 20;
  sandgate::test::SandboxFixture f(config);
  if (!f.require_isolation()) return;
  auto sb = f.create();
  // Holds 200 MiB for about a second, then lets it go before the call ends: the sample at the
  // call's end sees little memory now, only the watermark saw the 200 MiB.
  auto r =
      f.run(sb, Language::bash, "python3 -c \"import time; b = b'x' * (200 << 20); time.sleep(1)\"",
            std::chrono::seconds(30));
  REQUIRE(r.outcome == RunOutcome::completed);
  CHECK(r.exit_code == 0);
  // At least 200 MiB over the call's duration (> 1 s) is 0.19 GiB-s, i.e. $0.19; charged at the
  // last sample it would be what the sandbox holds after the program's end, a few MiB.
  CHECK(r.spend_usd >= 0.19);
}

TEST_CASE("a sandbox ends when its lifetime is over", "[sandbox][lifetime]") {
  auto config = sandgate::test::SandboxFixture::default_config();
  config.limits.lifetime = std::chrono::seconds(1);
  sandgate::test::SandboxFixture f(config);
  if (!f.require_isolation()) return;
  auto sb = f.create();
  auto r = f.run(sb, Language::bash, "sleep 30", std::chrono::seconds(30));
  CHECK(r.outcome == RunOutcome::sandbox_ended);
  CHECK(r.end_reason == EndReason::lifetime);
}

TEST_CASE("a supervisor killed from the host is a sandbox failure", "[sandbox][faults]") {
  sandgate::test::SandboxFixture f;
  if (!f.require_isolation()) return;
  auto sb = f.create();
  // Kill every process of the sandbox from outside while a call runs.
  auto killer = std::thread([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    std::ifstream procs(f.host().isolation().cgroups->pids.parent / sb->id() / "cgroup.procs");
    for (pid_t p; procs >> p;) ::kill(p, SIGKILL);
  });
  auto r = f.run(sb, Language::bash, "sleep 20", std::chrono::seconds(30));
  killer.join();
  CHECK(r.outcome == RunOutcome::sandbox_ended);
  CHECK(r.end_reason == EndReason::failed);
  // A fresh sandbox works.
  auto next = f.create();
  CHECK(f.run(next, Language::bash, "echo fresh").stdout_text == "fresh\n");
}

TEST_CASE("ending sandboxes leaves no process, cgroup or mount", "[sandbox][leaks]") {
  const std::size_t host_mounts = mounts_under_tmp();
  // Every process below this one while the sandboxes live (supervisors, what they started, the
  // programs left running in the background): each must be gone at the end, not only the
  // direct children.
  std::set<sandgate::test::ProcessIdentity> seen;
  {
    sandgate::test::SandboxFixture f;
    if (!f.require_isolation()) return;
    for (int i = 0; i < 6; ++i) {
      auto sb = f.create();
      f.run(sb, Language::bash,
            "(exec -a sandgate-leak-marker sleep 100) > /dev/null 2>&1 & "
            "echo started",
            std::chrono::seconds(5));
      if (i % 3 == 1) f.run(sb, Language::bash, "sleep 10", std::chrono::milliseconds(300));
      for (const auto& process : sandgate::test::descendants_of(::getpid())) seen.insert(process);
      if (i % 3 == 2) continue;  // dropped without end(): the destructor must clean up
      sb->end(EndReason::closed);
    }
    CHECK(f.host().live_count() == 0);
  }
  // The check below sees something to check: the supervisors and their programs were seen.
  CHECK(seen.size() >= 12);
  for (const auto& process : seen) {
    INFO("pid " << process.pid);
    CHECK_FALSE(sandgate::test::still_alive(process));
  }
  CHECK(sandgate::test::processes_running("sandgate-leak-marker 100") == 0);
  CHECK(sandgate::test::cgroups_of(::getpid()) == 0);
  CHECK_FALSE(has_children());
  // The sandboxes' mounts lived in their own namespaces: the host's table is as it was.
  CHECK(mounts_under_tmp() == host_mounts);
}
