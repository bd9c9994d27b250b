// Black-box tests: hostile programs in a real sandbox, asserting that what must never happen
// does not.
#include <netinet/in.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <thread>
#include <vector>

#include "forked_scenario.hpp"
#include "limit_cgroup.hpp"
#include "sandbox/file_util.hpp"
#include "sandbox_fixture.hpp"
#include "tests/support/host_probe.hpp"

using sandgate::sandbox::Language;
using sandgate::sandbox::RunOutcome;

namespace {

// The pids cgroup that limits this test process's sandbox, found from a process below this one
// (a supervisor, or what it runs): the first directory up from its own with a pids.max set.
std::filesystem::path pids_cgroup_of_sandbox() {
  for (const auto& process : sandgate::test::descendants_of(::getpid()))
    if (auto dir = sandgate::test::limiting_cgroup(process.pid, "pids", {"pids.max", "max"},
                                                   {"pids.max", "max"});
        !dir.empty())
      return dir;
  return {};
}

long read_number(const std::filesystem::path& file) {
  std::ifstream in(file);
  long value = -1;
  in >> value;
  return value;
}

long max_processes(const std::filesystem::path& cgroup) {
  return read_number(cgroup / "pids.max");
}

// Forks the pids cgroup refused ("max N" in pids.events).
long refused_forks(const std::filesystem::path& cgroup) {
  std::ifstream events(cgroup / "pids.events");
  for (std::string name; events >> name;) {
    long value = 0;
    events >> value;
    if (name == "max") return value;
  }
  return -1;
}

bool eventually(const std::function<bool()>& holds,
                std::chrono::seconds limit = std::chrono::seconds(30)) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    if (holds()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return holds();
}

// A TCP listener on the host's loopback, to prove the sandbox cannot reach it.
struct HostListener {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  int port = 0;
  HostListener() {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    REQUIRE(::listen(fd, 4) == 0);
    socklen_t len = sizeof a;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
    port = ntohs(a.sin_port);
  }
  ~HostListener() { ::close(fd); }
};

// Processes on the host running `program argument`.
int host_processes_running(const std::string& program, const std::string& argument) {
  std::string prefix = program + '\0' + argument + '\0';
  int n = 0;
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    std::string name = entry.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    auto cmdline = sandgate::sandbox::read_file(entry.path() / "cmdline").value_or("");
    if (cmdline.compare(0, prefix.size(), prefix) == 0) ++n;
  }
  return n;
}

// This test process's children that are sandbox supervisors.
std::vector<pid_t> supervisor_pids() {
  std::vector<pid_t> out;
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    std::string name = entry.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    auto cmdline = sandgate::sandbox::read_file(entry.path() / "cmdline").value_or("");
    auto stat = sandgate::sandbox::read_file(entry.path() / "stat").value_or("");
    auto close = stat.rfind(')');
    if (cmdline.rfind("sandgate-supervisor", 0) != 0 || close == std::string::npos) continue;
    int ppid = 0;
    char state = 0;
    std::sscanf(stat.c_str() + close + 1, " %c %d", &state, &ppid);
    if (ppid == ::getpid()) out.push_back(std::stoi(name));
  }
  return out;
}

}  // namespace

TEST_CASE("the network is unreachable from a sandbox", "[sandbox][isolation]") {
  sandgate::test::SandboxFixture f;
  // Python runs in the persistent interpreter and as a fresh process: both are held.
  f.fresh = GENERATE(false, true);
  INFO((f.fresh ? "fresh process" : "persistent interpreter"));
  if (!f.require_isolation()) return;
  HostListener listener;
  auto sb = f.create();
  auto r = f.run(sb, Language::python,
                 "import socket\n"
                 "try:\n"
                 "  socket.create_connection(('127.0.0.1', " +
                     std::to_string(listener.port) +
                     "), timeout=3)\n"
                     "  print('CONNECTED')\n"
                     "except OSError as e:\n"
                     "  print('refused', e.errno)\n"
                     "try:\n"
                     "  socket.getaddrinfo('deb.debian.org', 80)\n"
                     "  print('RESOLVED')\n"
                     "except OSError as e:\n"
                     "  print('no dns')\n");
  CHECK(r.exit_code == 0);
  CHECK(r.stdout_text.find("CONNECTED") == std::string::npos);
  CHECK(r.stdout_text.find("RESOLVED") == std::string::npos);
  CHECK(r.stdout_text.find("refused") != std::string::npos);
  // Raw TCP from bash too (its /dev/tcp uses socket(2)).
  auto b = f.run(sb, Language::bash,
                 "echo x > /dev/tcp/127.0.0.1/" + std::to_string(listener.port) + " && echo OPEN");
  CHECK(b.stdout_text.find("OPEN") == std::string::npos);
  CHECK(b.exit_code != 0);
}

TEST_CASE("the system is read-only and host secrets are out of reach", "[sandbox][isolation]") {
  sandgate::test::SandboxFixture f;
  if (!f.require_isolation()) return;
  ::setenv("SANDGATE_TEST_SECRET", "s3cr3t-gateway-token", 1);
  auto sb = f.create();
  auto r = f.run(sb, Language::bash,
                 "touch /usr/x 2>/dev/null && echo WROTE_USR\n"
                 "touch /x 2>/dev/null && echo WROTE_ROOT\n"
                 "touch /etc/passwd 2>/dev/null && echo WROTE_ETC\n"
                 "cat /etc/shadow 2>/dev/null && echo READ_SHADOW\n"
                 "grep -a s3cr3t /proc/*/environ 2>/dev/null && echo FOUND_TOKEN\n"
                 "env | grep -q SANDGATE && echo ENV_LEAK\n"
                 "ls /sys 2>/dev/null | head -1 | grep -q . && echo SYS_VISIBLE\n"
                 "ls /usr/local | grep -q . && echo USR_LOCAL_VISIBLE\n"
                 "id -u; touch /work/ok && echo work-writable\n");
  ::unsetenv("SANDGATE_TEST_SECRET");
  for (const char* bad : {"WROTE_USR", "WROTE_ROOT", "WROTE_ETC", "READ_SHADOW", "FOUND_TOKEN",
                          "ENV_LEAK", "SYS_VISIBLE", "USR_LOCAL_VISIBLE"}) {
    INFO(bad);
    CHECK(r.stdout_text.find(bad) == std::string::npos);
  }
  CHECK(r.stdout_text.find("1000\nwork-writable") != std::string::npos);
}

TEST_CASE("host processes and other sandboxes are invisible", "[sandbox][isolation]") {
  sandgate::test::SandboxFixture f;
  if (!f.require_isolation()) return;
  auto a = f.create();
  auto b = f.create();
  auto started =
      f.run(a, Language::bash,
            "echo private > /work/secret; nohup sleep 300.25 >/dev/null 2>&1 &\necho ok");
  REQUIRE(started.stdout_text == "ok\n");
  std::string host_pid = std::to_string(::getpid());
  auto r = f.run(b, Language::bash,
                 "cat /work/secret 2>/dev/null && echo READ_OTHER\n"
                 "ls /work | wc -l\n"
                 "grep -la '^sleep' /proc/[0-9]*/cmdline 2>/dev/null | wc -l\n"
                 "kill -0 " +
                     host_pid +
                     " 2>/dev/null && echo SIGNALLED_HOST\n"
                     "ls -d /proc/[0-9]* | wc -l\n");
  CHECK(r.stdout_text.find("READ_OTHER") == std::string::npos);
  CHECK(r.stdout_text.find("SIGNALLED_HOST") == std::string::npos);
  // Empty /work, no `sleep` of the other sandbox, and only a handful of our own processes.
  CHECK(r.stdout_text.rfind("0\n0\n", 0) == 0);
  auto count =
      std::atoi(r.stdout_text.substr(r.stdout_text.rfind('\n', r.stdout_text.size() - 2)).c_str());
  CHECK(count < 8);
  // The sleeper in A is still there: background processes outlive their call. (Seen from the
  // host: a later call's program does not see an earlier call's processes, which are in
  // another Landlock domain, so hidepid leaves them out of its /proc.)
  auto again = f.run(a, Language::bash, "cat /work/secret");
  CHECK(again.stdout_text == "private\n");
  CHECK(host_processes_running("sleep", "300.25") == 1);
}

TEST_CASE("/dev holds only the five character devices, the fd links, shm and an empty pts",
          "[sandbox][isolation][dev]") {
  sandgate::test::SandboxFixture f;
  if (!f.require_isolation()) return;
  auto sb = f.create();
  auto r = f.run(sb, Language::bash,
                 "cd /dev && for f in $(ls -A | sort); do stat -c '%n %F %t:%T' \"$f\"; done\n"
                 "ls -A /dev/pts | wc -l; mknod /dev/shm/x c 1 3 2>/dev/null || echo refused\n");
  CHECK(r.stdout_text ==
        "fd symbolic link 0:0\n"
        "full character special file 1:7\n"
        "null character special file 1:3\n"
        "pts directory 0:0\n"
        "random character special file 1:8\n"
        "shm directory 0:0\n"
        "stderr symbolic link 0:0\n"
        "stdin symbolic link 0:0\n"
        "stdout symbolic link 0:0\n"
        "urandom character special file 1:9\n"
        "zero character special file 1:5\n"
        "0\n"
        "refused\n");
}

TEST_CASE("/proc shows a program neither its supervisor nor the kernel's secrets",
          "[sandbox][isolation][proc]") {
  sandgate::test::SandboxFixture f;
  // Python runs in the persistent interpreter and as a fresh process: both are held.
  f.fresh = GENERATE(false, true);
  INFO((f.fresh ? "fresh process" : "persistent interpreter"));
  if (!f.require_isolation()) return;
  auto sb = f.create();
  auto r = f.run(sb, Language::python,
                 "import os\n"
                 "pids = [p for p in os.listdir('/proc') if p.isdigit()]\n"
                 "print('self visible' if os.path.exists('/proc/self/status') else 'NO SELF')\n"
                 "for p in ['1'] + pids:\n"
                 "  try: c = open('/proc/%s/cmdline' % p, 'rb').read()\n"
                 "  except OSError: continue\n"
                 "  if p == '1' or c.startswith(b'sandgate'): print('SEEN', p, c[:40])\n"
                 "for name in ['kallsyms', 'kcore', 'keys', 'timer_list', 'sched_debug']:\n"
                 "  try: data = open('/proc/' + name, 'rb').read(4096)\n"
                 "  except OSError: continue\n"
                 "  if data: print('READ', name)\n"
                 "try:\n"
                 "  open('/proc/sysrq-trigger', 'w').write('h'); print('WROTE sysrq-trigger')\n"
                 "except OSError: pass\n");
  INFO(r.stderr_text);
  CHECK(r.stdout_text == "self visible\n");
}

TEST_CASE("mount, ptrace, namespaces and symlink escapes are refused", "[sandbox][isolation]") {
  sandgate::test::SandboxFixture f;
  // Python runs in the persistent interpreter and as a fresh process: both are held.
  f.fresh = GENERATE(false, true);
  INFO((f.fresh ? "fresh process" : "persistent interpreter"));
  if (!f.require_isolation()) return;
  auto sb = f.create();
  auto r = f.run(sb, Language::python,
                 "import ctypes, os\n"
                 "libc = ctypes.CDLL(None, use_errno=True)\n"
                 "print('mount', libc.mount(b'none', b'/tmp', b'tmpfs', 0, None))\n"
                 "print('ptrace', libc.ptrace(0, 0, 0, 0))\n"
                 "print('unshare', libc.unshare(0x10000000))\n"
                 "os.symlink('/etc/shadow', '/work/link')\n"
                 "try:\n"
                 "  open('/work/link').read(); print('ESCAPED')\n"
                 "except OSError: print('no shadow')\n"
                 "try:\n"
                 "  os.setuid(0); print('ROOT')\n"
                 "except OSError: print('no setuid')\n");
  CHECK(r.stdout_text == "mount -1\nptrace -1\nunshare -1\nno shadow\nno setuid\n");
}

TEST_CASE("a fork bomb is contained, and its timeout kills every copy", "[sandbox][limits]") {
  sandgate::test::SandboxFixture f;
  if (!f.require_isolation()) return;
  auto sb = f.create();
  // The bomb fills the process limit; bash then keeps retrying its own fork past the timeout.
  auto r = f.run(sb, Language::bash, "bomb() { bomb | bomb & }; bomb; sleep 30",
                 std::chrono::seconds(3));
  CHECK(r.outcome == RunOutcome::timed_out);
  // The timeout took the whole bomb with it: the sandbox serves the next call.
  auto after = f.run(sb, Language::bash, "echo alive");
  INFO("failure '" << after.failure << "'");
  CHECK(after.stdout_text == "alive\n");
}

TEST_CASE("a bomb left running after its call makes a clear failure, not a hang",
          "[sandbox][limits]") {
  sandgate::test::SandboxFixture f;
  if (!f.require_isolation()) return;
  auto sb = f.create();
  auto r =
      f.run(sb, Language::bash, "bomb() { bomb | bomb & }; (bomb) > /dev/null 2>&1 & echo left",
            std::chrono::seconds(5));
  CHECK(r.stdout_text == "left\n");
  // Once the bomb has met the process limit (the pids cgroup counts each refused fork)…
  auto pids = pids_cgroup_of_sandbox();
  REQUIRE_FALSE(pids.empty());
  REQUIRE(eventually([&] { return refused_forks(pids) > 0; }));
  auto after = f.run(sb, Language::bash, "echo alive");
  // …the next call is answered either way: background processes may outlive their call, and a
  // bomb's processes come and go, so a slot may be free when the call starts. When none is, the
  // call says so and the sandbox ends (the next test holds every slot to see that case).
  if (after.outcome == RunOutcome::sandbox_ended) {
    CHECK(after.failure.find("process limit") != std::string::npos);
    CHECK(sb->ended());
  } else {
    CHECK(after.stdout_text == "alive\n");
  }
  auto fresh = f.create();
  CHECK(f.run(fresh, Language::bash, "echo fresh").stdout_text == "fresh\n");
}

TEST_CASE("processes left holding every process slot make the next call a clear failure",
          "[sandbox][limits]") {
  sandgate::test::SandboxFixture f;
  if (!f.require_isolation()) return;
  auto sb = f.create();
  // A holder left behind takes every slot and keeps each one that frees (the call's own
  // process's, when it exits) by forking again. (A fresh process: a fork of the persistent
  // interpreter would hold its channel too.)
  f.fresh = true;
  auto r = f.run(sb, Language::python,
                 "import os, time\n"
                 "if os.fork() == 0:\n"
                 "  fd = os.open('/dev/null', os.O_RDWR)\n"
                 "  for n in (0, 1, 2): os.dup2(fd, n)\n"
                 "  os.setsid()\n"
                 "  while True:\n"
                 "    try:\n"
                 "      if os.fork() == 0:\n"
                 "        while True: time.sleep(1000)\n"
                 "    except OSError:\n"
                 "      time.sleep(0.01)\n"
                 "print('holding')\n",
                 std::chrono::seconds(10));
  CHECK(r.stdout_text == "holding\n");
  auto pids = pids_cgroup_of_sandbox();
  REQUIRE_FALSE(pids.empty());
  REQUIRE(eventually([&] { return read_number(pids / "pids.current") >= max_processes(pids); }));
  auto after = f.run(sb, Language::bash, "echo alive");
  CHECK(after.outcome == RunOutcome::sandbox_ended);
  CHECK(after.failure.find("process limit") != std::string::npos);
  CHECK(sb->ended());
  auto fresh = f.create();
  CHECK(f.run(fresh, Language::bash, "echo fresh").stdout_text == "fresh\n");
}

TEST_CASE("a memory bomb is reported as an OOM kill", "[sandbox][limits]") {
  sandgate::test::SandboxFixture f;
  // Python runs in the persistent interpreter and as a fresh process: both are held.
  f.fresh = GENERATE(false, true);
  INFO((f.fresh ? "fresh process" : "persistent interpreter"));
  if (!f.require_isolation()) return;
  auto sb = f.create();
  auto r = f.run(sb, Language::python,
                 "x = bytearray(1 << 30)\nx[::4096] = b'a' * (len(x) // 4096)\nprint('ALLOCATED')");
  CHECK(r.outcome == RunOutcome::completed);
  CHECK(r.oom_killed);
  CHECK(r.exit_code == 137);
  CHECK(r.stdout_text.find("ALLOCATED") == std::string::npos);
}

TEST_CASE("when memory runs out around the gateway, sandbox processes are killed first",
          "[sandbox][limits]") {
  sandgate::test::SandboxFixture f;
  if (!f.require_isolation()) return;
  auto sb = f.create();
  // Every process of the sandbox carries the highest OOM score, and cannot lower it.
  auto r = f.run(sb, Language::bash,
                 "cat /proc/self/oom_score_adj; (echo 0 > /proc/self/oom_score_adj) 2>&1 "
                 "&& echo LOWERED");
  CHECK(r.stdout_text.rfind("1000\n", 0) == 0);
  CHECK(r.stdout_text.find("LOWERED") == std::string::npos);
  // The supervisor too: seen from the host, since programs may not see it.
  auto supervisors = supervisor_pids();
  REQUIRE(supervisors.size() == 1);
  CHECK(sandgate::sandbox::read_file("/proc/" + std::to_string(supervisors[0]) +
                                     "/oom_score_adj") == "1000\n");
}

TEST_CASE("filling /work ends in ENOSPC", "[sandbox][limits]") {
  sandgate::test::SandboxFixture f;
  if (!f.require_isolation()) return;
  auto sb = f.create();
  auto r = f.run(sb, Language::bash,
                 "head -c 64M /dev/zero > /work/big; echo rc=$?; du -sm /work | cut -f1");
  CHECK(r.stderr_text.find("No space left on device") != std::string::npos);
  CHECK(r.stdout_text.rfind("rc=1\n", 0) == 0);
}

TEST_CASE("an output flood is truncated at the cap", "[sandbox][limits]") {
  auto config = sandgate::test::SandboxFixture::default_config();
  config.limits.output_bytes = 64 * 1024;
  sandgate::test::SandboxFixture f(config);
  // Python runs in the persistent interpreter and as a fresh process: both are held.
  f.fresh = GENERATE(false, true);
  INFO((f.fresh ? "fresh process" : "persistent interpreter"));
  if (!f.require_isolation()) return;
  auto sb = f.create();
  auto r = f.run(sb, Language::python,
                 "import sys\nfor _ in range(2000): sys.stdout.write('x' * 10000)\n"
                 "sys.stderr.write('done')");
  CHECK(r.outcome == RunOutcome::completed);
  CHECK(r.exit_code == 0);
  CHECK(r.truncated);
  CHECK(r.stdout_text.size() + r.stderr_text.size() == 64 * 1024);
}

TEST_CASE("a timeout kills the call's whole tree, setsid children included", "[sandbox][limits]") {
  sandgate::test::SandboxFixture f;
  if (!f.require_isolation()) return;
  auto sb = f.create();
  auto r = f.run(sb, Language::bash,
                 "echo partial; setsid sleep 1000.25 & (sleep 1001.25 &) ; sleep 1002.25",
                 std::chrono::seconds(1));
  CHECK(r.outcome == RunOutcome::timed_out);
  CHECK(r.stdout_text == "partial\n");
  // Counted from the host: a program's /proc does not show an earlier call's processes.
  for (const char* seconds : {"1000.25", "1001.25", "1002.25"}) {
    INFO("sleep " << seconds);
    CHECK(host_processes_running("sleep", seconds) == 0);
  }
  auto after = f.run(sb, Language::bash, "echo alive");
  CHECK(after.stdout_text == "alive\n");
}

TEST_CASE("Landlock refuses executing anything outside the allowed trees", "[sandbox][isolation]") {
  sandgate::test::SandboxFixture f;
  if (!f.require_isolation()) return;
  if (f.host().isolation().landlock_abi == 0) {
    sandgate::test::skip_test("landlock", "this kernel has no Landlock");
    return;
  }
  auto sb = f.create();
  // /tmp is writable and not mounted noexec: only Landlock stops running a binary from it.
  auto r = f.run(sb, Language::bash,
                 "cp /usr/bin/true /tmp/t && chmod +x /tmp/t && /tmp/t; echo tmp=$?\n"
                 "cp /usr/bin/true /work/t && chmod +x /work/t && /work/t; echo work=$?\n");
  CHECK(r.stdout_text == "tmp=126\nwork=0\n");
  CHECK(r.stderr_text.find("Permission denied") != std::string::npos);
}

// In a container /dev/null is a bind mount with flags (nosuid, noexec) that the sandbox's user
// namespace may not drop: /proc's masks, binds of it, must still be made (found in the VM
// stage's pods). The scenario runs in a forked child with a mount namespace of its own.
TEST_CASE("/proc's masks are made where /dev/null is a container's locked bind",
          "[sandbox][isolation][proc]") {
  // Python runs in the persistent interpreter and as a fresh process: both are held. The
  // choice is made here, in the test process: a GENERATE inside the forked child would register
  // only in the child's copy of Catch's state, and the second case would never run.
  const bool fresh = GENERATE(false, true);
  INFO((fresh ? "fresh process" : "persistent interpreter"));
  auto answer = sandgate::test::run_forked([fresh]() -> std::string {
    if (::unshare(CLONE_NEWNS) != 0 ||
        ::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0 ||
        ::mount("/dev/null", "/dev/null", nullptr, MS_BIND, nullptr) != 0 ||
        ::mount(nullptr, "/dev/null", nullptr, MS_BIND | MS_REMOUNT | MS_NOSUID | MS_NOEXEC,
                nullptr) != 0)
      return "SKIP: cannot make a mount namespace here";
    // The mounts are the point here, not the limits: a second gateway in the test process's
    // cgroup (a Delegate=yes unit) could not have cgroups of its own.
    auto config = sandgate::test::SandboxFixture::default_config();
    config.accept_no_cgroups = true;
    sandgate::test::SandboxFixture f(config);
    f.fresh = fresh;
    if (!f.host().isolation().usable()) return "SKIP: " + f.host().isolation().problem;
    auto sb = f.create();
    auto r = f.run(sb, Language::python,
                   "try:\n"
                   "  open('/proc/sysrq-trigger', 'w').write('h'); print('WROTE')\n"
                   "except OSError as e: print('refused')\n"
                   "try: print(len(open('/proc/kallsyms', 'rb').read()))\n"
                   "except OSError as e: print('0')\n");
    return r.stdout_text;
  });
  if (answer.rfind("SKIP: ", 0) == 0) {
    sandgate::test::skip_test("sandboxes", answer.substr(6));
    return;
  }
  // Writing is refused; kallsyms gives nothing (empty, or not readable at all).
  CHECK(answer == "refused\n0\n");
}
