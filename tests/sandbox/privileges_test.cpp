// The layers docs/security-model.md counts on when the others fail, read from where they hold:
// each sandbox's processes run as a host uid of their own; nothing in a sandbox holds a
// capability, may regain one, or runs without its seccomp filter; and the CPU quota throttles.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "limit_cgroup.hpp"
#include "sandbox_fixture.hpp"
#include "tests/support/host_probe.hpp"
#include "tests/support/skip.hpp"

using sandgate::sandbox::Language;

namespace {

// Starts `sleep 600` under the name `marker` in the sandbox, in the background (it outlives the
// call), and returns its host pid once the host sees it; 0 if it never shows.
pid_t start_marked_process(sandgate::test::SandboxFixture& f,
                           const std::shared_ptr<sandgate::sandbox::Sandbox>& sb,
                           const std::string& marker) {
  // The test's own pid in the marker: the isolation checks run in several ctest entries at once
  // (pool, egress, layer), each with sandboxes marked alike, and one ending its sandbox must not
  // take the process another found.
  const std::string mine = marker + "-" + std::to_string(::getpid());
  f.run(sb, Language::bash, "(exec -a " + mine + " sleep 600) > /dev/null 2>&1 &");
  for (int i = 0; i < 200; ++i) {
    if (pid_t pid = sandgate::test::process_running(mine + " 600")) return pid;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return 0;
}

// "Uid:\t1001\t1001\t1001\t1001": the four ids (real, effective, saved, filesystem).
std::vector<long> ids_of(const std::string& field) {
  std::istringstream in(field);
  std::vector<long> ids;
  for (long id; in >> id;) ids.push_back(id);
  return ids;
}

// The cgroup directory whose CPU quota holds `pid` (v1 cpu controller or v2).
std::filesystem::path quota_cgroup_of(pid_t pid) {
  return sandgate::test::limiting_cgroup(pid, "cpu", {"cpu.cfs_quota_us", "-1"},
                                         {"cpu.max", "max"});
}

// A counter of the cgroup's cpu.stat (nr_periods, nr_throttled); -1 when absent.
long cpu_stat(const std::filesystem::path& cgroup, const std::string& counter) {
  std::ifstream stat(cgroup / "cpu.stat");
  for (std::string name; stat >> name;) {
    long value = 0;
    stat >> value;
    if (name == counter) return value;
  }
  return -1;
}

// The CPUs the cgroup's quota allows (quota / period: v1 cpu.cfs_quota_us and cpu.cfs_period_us,
// v2 cpu.max "QUOTA PERIOD"); -1 when it has none.
double quota_cpus(const std::filesystem::path& cgroup) {
  long quota = -1, period = 0;
  if (std::ifstream max(cgroup / "cpu.max"); max) {
    std::string q;
    max >> q >> period;
    if (q != "max") quota = std::stol(q);
  } else {
    std::ifstream(cgroup / "cpu.cfs_quota_us") >> quota;
    std::ifstream(cgroup / "cpu.cfs_period_us") >> period;
  }
  return quota > 0 && period > 0 ? static_cast<double>(quota) / static_cast<double>(period) : -1;
}

}  // namespace

TEST_CASE("each sandbox's processes run as a host uid of their own, not root's",
          "[sandbox][isolation][uid]") {
  sandgate::test::SandboxFixture f;
  if (!f.require_isolation()) return;
  if (::geteuid() != 0) {
    sandgate::test::skip_test("root", "distinct host uids are given by a gateway started as root");
    return;
  }
  auto a = f.create();
  auto b = f.create();
  pid_t in_a = start_marked_process(f, a, "sandgate-uid-marker-a");
  pid_t in_b = start_marked_process(f, b, "sandgate-uid-marker-b");
  REQUIRE(in_a != 0);
  REQUIRE(in_b != 0);
  auto uids_a = ids_of(sandgate::test::status_field(in_a, "Uid"));
  auto uids_b = ids_of(sandgate::test::status_field(in_b, "Uid"));
  INFO("host uids: a " << sandgate::test::status_field(in_a, "Uid") << ", b "
                       << sandgate::test::status_field(in_b, "Uid"));
  REQUIRE(uids_a.size() == 4);
  REQUIRE(uids_b.size() == 4);
  // Real, effective, saved and filesystem ids agree: nothing to switch back to.
  for (long id : uids_a) CHECK(id == uids_a[0]);
  for (long id : uids_b) CHECK(id == uids_b[0]);
  CHECK(uids_a[0] != 0);
  CHECK(uids_b[0] != 0);
  CHECK(uids_a[0] != uids_b[0]);
  CHECK(ids_of(sandgate::test::status_field(in_a, "Gid"))[0] != 0);
}

TEST_CASE("a sandboxed program holds no capability, cannot gain one, and runs filtered",
          "[sandbox][isolation][privileges]") {
  sandgate::test::SandboxFixture f;
  if (!f.require_isolation()) return;
  // Every way a program starts: a shell, a fresh interpreter, the persistent interpreter.
  const std::string expected =
      "CapInh:\t0000000000000000\nCapPrm:\t0000000000000000\nCapEff:\t0000000000000000\n"
      "CapBnd:\t0000000000000000\nCapAmb:\t0000000000000000\nNoNewPrivs:\t1\nSeccomp:\t2\n";
  const std::string python =
      "import re\n"
      "print(''.join(l for l in open('/proc/self/status')\n"
      "      if re.match(r'(Cap(Inh|Prm|Eff|Bnd|Amb)|NoNewPrivs|Seccomp):', l)), end='')\n";
  auto sb = f.create();
  auto shell = f.run(sb, Language::bash,
                     "grep -E '^(Cap(Inh|Prm|Eff|Bnd|Amb)|NoNewPrivs|Seccomp):' /proc/self/status");
  CHECK(shell.stdout_text == expected);
  f.fresh = true;
  CHECK(f.run(sb, Language::python, python).stdout_text == expected);
  f.fresh = false;
  CHECK(f.run(sb, Language::python, python).stdout_text == expected);
}

TEST_CASE("the CPU quota throttles a busy loop", "[sandbox][limits][cpu]") {
  auto config = sandgate::test::SandboxFixture::default_config();
  config.limits.cpus = 0.5;
  sandgate::test::SandboxFixture f(config);
  if (!f.require_isolation()) return;
  auto sb = f.create();
  pid_t inside = start_marked_process(f, sb, "sandgate-cpu-marker");
  REQUIRE(inside != 0);
  auto cgroup = quota_cgroup_of(inside);
  if (cgroup.empty() && f.host().isolation().mode != "full") {
    sandgate::test::skip_test("cgroups", "this gateway runs sandboxes without cgroups");
    return;
  }
  REQUIRE_FALSE(cgroup.empty());
  // The quota is the one asked for (issue #41: the check passed on a busy host with none).
  CHECK(quota_cpus(cgroup) == Approx(config.limits.cpus));
  long periods_before = cpu_stat(cgroup, "nr_periods");
  long before = cpu_stat(cgroup, "nr_throttled");
  // 1.5 s of spinning: with half a CPU it gets at most about half of that.
  f.fresh = true;
  auto spun = f.run(sb, Language::python,
                    "import time\n"
                    "wall, cpu = time.monotonic(), time.process_time()\n"
                    "while time.monotonic() - wall < 1.5: pass\n"
                    "print(round((time.process_time() - cpu) / (time.monotonic() - wall), 3))\n");
  REQUIRE(spun.exit_code == 0);
  INFO("cgroup " << cgroup << ", CPU share of the loop " << spun.stdout_text);
  const double share = std::stod(spun.stdout_text);
  CHECK(share < 0.7);
  // A loop that got more than its quota must have been throttled. One that a busy host (the
  // suites run in parallel) gave less than the quota never reached it, so nothing throttled it.
  CHECK((cpu_stat(cgroup, "nr_throttled") > before || share < config.limits.cpus));
  // The quota was enforced while the loop ran: the kernel counts enforcement periods only for a
  // cgroup with a quota that used CPU, whatever else the host was doing.
  CHECK(cpu_stat(cgroup, "nr_periods") > periods_before);
}
