// How the gateway finds and prepares its cgroups on the host layouts it is deployed on. The VM
// stage (tests/vm) runs these suites on pure cgroup v2 too, as a systemd unit and in pods.
#include <cstdio>
#include <fstream>

#include "gateway_process.hpp"
#include "tests/support/skip.hpp"

using namespace sandgate::test;
using nlohmann::json;

namespace {

// Where this host mounts its cgroup v2 hierarchy ("" when it has none).
std::string cgroup2_mount_point() {
  std::ifstream in("/proc/self/mountinfo");
  for (std::string line; std::getline(in, line);) {
    auto dash = line.find(" - cgroup2 ");
    if (dash == std::string::npos) continue;
    std::istringstream fields(line);
    std::string id, parent, dev, root, point;
    fields >> id >> parent >> dev >> root >> point;
    return point;
  }
  return "";
}

// The gateway in a private mount and cgroup namespace whose cgroup2 mount is read-only: what a
// container runtime gives a non-privileged Kubernetes container.
std::vector<std::string> read_only_cgroup2(const std::string& point) {
  return {"/usr/bin/unshare",
          "-m",
          "--propagation",
          "private",
          "-C",
          "/bin/sh",
          "-c",
          "mount -o remount,bind,ro \"$0\" && exec \"$@\"",
          point};
}

std::string run_capture(const std::string& command) {
  std::string out;
  FILE* pipe = ::popen(command.c_str(), "r");
  if (!pipe) return out;
  char buf[4096];
  for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, pipe)) > 0;) out.append(buf, n);
  ::pclose(pipe);
  return out;
}

}  // namespace

TEST_CASE("a read-only cgroup2 mount (a container's) is replaced by a fresh, writable one",
          "[integration][cgroups]") {
  std::string point = cgroup2_mount_point();
  if (point.empty()) {
    sandgate::test::skip_test("cgroup-v2", "this host has no cgroup v2 hierarchy");
    return;
  }
  // Quoted for the shell: the wrapper (a cgroup of its own in the VM stage), then the mount.
  std::string command = own_cgroup_shell_prefix();
  command +=
      "/usr/bin/unshare -m --propagation private -C /bin/sh -c "
      "'mount -o remount,bind,ro \"$0\" && exec \"$1\" --check-isolation' " +
      point + " " SANDGATE_BINARY " 2>&1";
  std::string report = run_capture(command);
  INFO(report);
  CHECK(report.find("cgroup setup: mounted a fresh cgroup2 over the read-only " + point) !=
        std::string::npos);
  CHECK(report.find("mode: full") != std::string::npos);
  CHECK(report.find("probe sandbox: ok") != std::string::npos);

  // The real gateway behind such a mount serves with full isolation.
  GatewayProcess gw({}, {"SANDGATE_TOKEN=test-token"}, false, read_only_cgroup2(point));
  std::string id = gw.initialize();
  auto result = gw.execute(id, "echo hi", "bash");
  CHECK(result["isError"] == false);
  CHECK(result["structuredContent"]["stdout"] == "hi\n");
  pid_t pid = gw.pid();
  CHECK(gw.stop() == 0);
  CHECK(cgroups_of(pid) == 0);
}

TEST_CASE(
    "without CAP_SYS_ADMIN (Pod Security baseline: SETUID and SETGID only) the gateway reaches "
    "its read-only cgroup through a cgroup2 mount made in a user namespace of its own",
    "[integration][cgroups]") {
  std::string point = cgroup2_mount_point();
  if (point.empty()) {
    sandgate::test::skip_test("cgroup-v2", "this host has no cgroup v2 hierarchy");
    return;
  }
  std::string command = own_cgroup_shell_prefix();
  // The mount is made read-only while root still has every capability; then the gateway starts
  // with a bounding set of SETUID and SETGID alone, as a pod's runtime starts it.
  command +=
      "/usr/bin/unshare -m --propagation private -C /bin/sh -c "
      "'mount -o remount,bind,ro \"$0\" && exec /usr/bin/setpriv --bounding-set "
      "-all,+setuid,+setgid --inh-caps -all \"$1\" --check-isolation' " +
      point + " " SANDGATE_BINARY " 2>&1";
  std::string report = run_capture(command);
  INFO(report);
  CHECK(report.find("cgroup setup: reached the cgroup through a cgroup2 mount made in a user "
                    "namespace of the gateway's own (no CAP_SYS_ADMIN here)") != std::string::npos);
  if (own_cgroup_wrapper().empty()) {
    // Outside the VM stage the gateway sits in a root cgroup (0555: writable only with
    // CAP_DAC_OVERRIDE, which it no longer has): the full run is the VM stage's and the sandbox
    // test's ("a gateway with only CAP_SETUID and CAP_SETGID …"). Here the view itself is what
    // is checked (above), not a skip: CI requires every capability a test names.
    WARN(
        "no cgroup of its own for the gateway here (SANDGATE_TEST_CGROUP_PARENT unset): only "
        "the view was checked");
    return;
  }
  CHECK(report.find("mode: full") != std::string::npos);
  CHECK(report.find("probe sandbox: ok") != std::string::npos);
}

TEST_CASE(
    "the sweep at start spares the sandboxes of a live gateway, not those of an earlier "
    "process its pid once named (directories named by pid and start time)",
    "[integration][cgroups]") {
  // Both gateways in one cgroup (on a pure v2 host: as in one unit), so that the second's
  // sweep looks where the first keeps its sandboxes.
  const std::vector<std::string> env = {"SANDGATE_TOKEN=test-token",
                                        "SANDGATE_TEST_CGROUP=sweep-" + std::to_string(::getpid())};
  GatewayProcess first({}, env);
  first.execute(first.initialize(), "echo one", "bash");
  int before = sandbox_cgroups_of(first.pid());  // one per hierarchy (v1 has several)
  REQUIRE(before > 0);
  // What a crashed gateway would have left if its pid were the first's now: the same pid, an
  // earlier start time. Beside each of the first's instance directories.
  std::vector<std::filesystem::path> stale;
  for (const auto& dir : instance_cgroups_of(first.pid())) {
    std::string name = dir.filename().string();  // sandgate-<pid>-<start>-<n>
    auto start_at = name.find('-', 9) + 1, start_end = name.find('-', start_at);
    REQUIRE(start_end != std::string::npos);
    auto start = std::stoull(name.substr(start_at, start_end - start_at));
    auto earlier = dir.parent_path() / ("sandgate-" + std::to_string(first.pid()) + "-" +
                                        std::to_string(start - 1) + name.substr(start_end));
    REQUIRE(std::filesystem::create_directory(earlier));
    stale.push_back(earlier);
  }
  REQUIRE_FALSE(stale.empty());
  // A second gateway sweeps at start: the first is alive, so its sandbox stays; the directories
  // of the earlier process with its pid go.
  GatewayProcess second({}, env);
  CHECK(sandbox_cgroups_of(first.pid()) == before);
  for (const auto& dir : stale) {
    INFO(dir);
    CHECK_FALSE(std::filesystem::exists(dir));
  }
  CHECK(second.execute(second.initialize(), "echo two", "bash")["isError"] == false);
  CHECK(first.execute(first.initialize(), "echo still", "bash")["isError"] == false);
}

TEST_CASE("sandbox ids the gateway's user namespace does not map: refused, and the reason says so",
          "[integration][cgroups]") {
  // A user namespace that maps only root, as a pod's maps only its 65536 ids.
  std::string report =
      run_capture("/usr/bin/unshare -U --map-root-user " SANDGATE_BINARY " --check-isolation 2>&1");
  INFO(report);
  CHECK(report.find("mode: refused") != std::string::npos);
  CHECK(report.find("are not all mapped in the gateway's user namespace") != std::string::npos);
}
