// A gateway as a pod admitted under Pod Security "baseline" runs it (issue #46): root in the
// container with only CAP_SETUID and CAP_SETGID, the cgroup fs mounted read-only, no
// CAP_SYS_ADMIN to mount a fresh one. It still makes full sandboxes: their namespaces need no
// capability, their id maps need SETUID/SETGID, and its cgroup is reached through a cgroup2
// mount made in a user namespace of its own. And where a seccomp profile refuses user
// namespaces (the runtimes' RuntimeDefault), the isolation check names the profile to use.
#include <linux/capability.h>
#include <sched.h>
#include <seccomp.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <sstream>
#include <vector>

#include "forked_scenario.hpp"
#include "sandbox/cgroups/cgroup_tree.hpp"
#include "sandbox/cgroups/cgroups.hpp"
#include "sandbox/file_util.hpp"
#include "sandbox_fixture.hpp"

using sandgate::sandbox::Language;
namespace fs = std::filesystem;

namespace {

// Every capability but CAP_SETUID and CAP_SETGID goes, from the bounding set too (as a
// container runtime leaves it for `drop: [ALL]; add: [SETUID, SETGID]`).
std::string keep_only_setuid_setgid() {
  int last = 0;
  if (auto text = sandgate::sandbox::read_file("/proc/sys/kernel/cap_last_cap"))
    last = std::atoi(text->c_str());
  for (int cap = 0; cap <= last; ++cap)
    if (cap != CAP_SETUID && cap != CAP_SETGID && ::prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0)
      return "SETUP: PR_CAPBSET_DROP failed";
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3] = {};
  data[0].effective = data[0].permitted = (1u << CAP_SETUID) | (1u << CAP_SETGID);
  if (::syscall(SYS_capset, &header, data) != 0) return "SETUP: capset failed";
  return "";
}

// The root cgroup's directory is 0555 (writable only with CAP_DAC_OVERRIDE, which a pod's root
// lacks too): a process at a hierarchy's root (a hybrid host's) moves into a child first, as a
// container's process sits in the container's cgroup. Each child made is listed in `made`.
std::string leave_root_cgroup(const sandgate::sandbox::CgroupMount& m,
                              const std::string& controller, fs::path& own,
                              std::vector<fs::path>& made) {
  own = sandgate::sandbox::own_cgroup_dir(m, controller);
  if (own != m.point) return "";
  own /= "sandgate-baseline-test-" + std::to_string(::getpid());
  if (::mkdir(own.c_str(), 0755) != 0) return "SETUP: mkdir " + own.string();
  made.push_back(own);
  try {
    sandgate::sandbox::write_file(own / "cgroup.procs", "0");
  } catch (const std::exception& e) {
    return std::string("SETUP: ") + e.what();
  }
  return "";
}

// In a mount namespace of its own: every cgroup2 mount read-only, as a runtime mounts it in a
// pod. `own` is the real path of this process's v2 cgroup (read-only now).
std::string read_only_cgroup2(fs::path& own, std::vector<fs::path>& made) {
  if (::unshare(CLONE_NEWNS) != 0) return "SETUP: unshare(CLONE_NEWNS) failed";
  if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0)
    return "SETUP: could not make / private";
  bool any = false;
  for (const auto& m : sandgate::sandbox::cgroup_mounts()) {
    if (m.fstype == "cgroup") {
      for (const char* c : {"memory", "pids", "cpu", "cpuacct", "freezer"}) {
        if (!sandgate::sandbox::has_mount_option(m.options, c)) continue;
        fs::path v1_own;
        if (auto problem = leave_root_cgroup(m, c, v1_own, made); !problem.empty()) return problem;
        break;
      }
      continue;
    }
    if (m.fstype != "cgroup2") continue;
    any = true;
    if (auto problem = leave_root_cgroup(m, "", own, made); !problem.empty()) return problem;
    // A container's cgroup holds only the gateway. This child shares its cgroup with the test
    // process (a Delegate=yes unit's, in the VM stage), which no child cgroup can be given
    // controllers past: there the integration test "without CAP_SYS_ADMIN …" runs the same with
    // a cgroup per gateway.
    if (made.empty() && sandgate::sandbox::cgroup_procs(own).size() > 1)
      return "SKIP: this process shares its cgroup " + own.string() + " with the test runner";
    if (::mount(nullptr, m.point.c_str(), nullptr,
                MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr) != 0)
      return "SETUP: could not remount " + m.point.string() + " read-only";
  }
  return any ? "" : "SKIP: no cgroup2 hierarchy here";
}

std::string baseline_run() {
  fs::path own;
  std::vector<fs::path> made;
  auto setup = read_only_cgroup2(own, made);
  std::string answer;
  for (const auto& dir : made) answer += "made: " + dir.string() + "\n";
  if (!setup.empty()) return answer + setup;
  if (auto problem = keep_only_setuid_setgid(); !problem.empty()) return answer + problem;
  fs::path instance;
  {
    sandgate::test::SandboxFixture f;
    const auto& report = f.host().isolation();
    if (!report.usable()) return answer + "REFUSED: " + report.problem;
    answer += "notes: " + report.cgroups->notes + "\n";
    answer += "killer: " + report.cgroups->killer.parent.string() + "\n";
    // The instance cgroup exists in the real (read-only) tree: the view is the same cgroup.
    instance = own / report.cgroups->killer.parent.filename();
    answer +=
        std::string("instance visible: ") + (fs::is_directory(instance) ? "yes" : "no") + "\n";
    auto sb = f.create();
    auto r = f.run(sb, Language::bash, "echo ran as $(id -u)");
    answer += "run: " + r.stdout_text + r.stderr_text + r.failure;
  }
  // The fixture is gone: its sandboxes ended and its instance cgroup removed, through the view.
  answer += std::string("instance left: ") + (fs::exists(instance) ? "yes" : "no") + "\n";
  return answer;
}

// The namespaces refused as RuntimeDefault refuses them without CAP_SYS_ADMIN: unshare and
// clone with CLONE_NEWUSER get EPERM.
std::string runtime_default_run() {
  scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
  if (ctx == nullptr) return "SETUP: seccomp_init";
  int rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(unshare), 0);
  rc |= seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(clone), 1,
                         SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_NEWUSER, CLONE_NEWUSER));
  rc |= seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0);
  if (rc != 0 || seccomp_load(ctx) != 0) return "SETUP: seccomp_load";
  seccomp_release(ctx);
  sandgate::test::SandboxFixture f;
  return f.host().isolation().mode + ": " + f.host().isolation().problem;
}

}  // namespace

TEST_CASE("a gateway with only CAP_SETUID and CAP_SETGID and a read-only cgroup fs runs sandboxes",
          "[sandbox][baseline]") {
  if (::geteuid() != 0) {
    sandgate::test::skip_test("root", "the scenario drops root's capabilities, which needs root");
    return;
  }
  auto answer = sandgate::test::run_forked(baseline_run);
  // The child cgroups the scenario made for itself, if any: empty now that it has exited.
  std::istringstream lines(answer);
  for (std::string line; std::getline(lines, line);)
    if (line.rfind("made: ", 0) == 0) ::rmdir(line.substr(6).c_str());
  if (answer.find("SKIP: ") != std::string::npos) {
    sandgate::test::skip_test(
        answer.find("shares its cgroup") != std::string::npos ? "cgroup-of-its-own" : "cgroup-v2",
        answer);
    return;
  }
  INFO(answer);
  CHECK(answer.find("a user namespace of the gateway's own") != std::string::npos);
  CHECK(answer.find("killer: /proc/self/fd/") != std::string::npos);
  CHECK(answer.find("instance visible: yes") != std::string::npos);
  CHECK(answer.find("run: ran as ") != std::string::npos);
  CHECK(answer.find("instance left: no") != std::string::npos);
}

TEST_CASE("where seccomp refuses user namespaces, the isolation check names the profile to use",
          "[sandbox][baseline]") {
  auto answer = sandgate::test::run_forked([] {
    ::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
    return runtime_default_run();
  });
  INFO(answer);
  CHECK(answer.rfind("refused: creating a user namespace", 0) == 0);
  CHECK(answer.find("deploy/k8s/security-profiles/sandgate.json") != std::string::npos);
}
