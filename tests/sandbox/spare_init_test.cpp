// The spare init: between calls a sandbox's supervisor makes the next call's init ahead of
// time, waiting in a pid namespace of its own. Each is used by exactly one call, the next call
// makes its own if the spare is gone, and an interpreter can start in one too.
#include <signal.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <sstream>
#include <thread>
#include <vector>

#include "sandbox_fixture.hpp"
#include "tests/support/host_probe.hpp"

using sandgate::sandbox::Language;
using sandgate::sandbox::RunResult;
using sandgate::test::gone_within;
using sandgate::test::ProcessIdentity;

namespace {

// How deep `pid` is nested: its NSpid entries (the host's pid first). A sandbox's supervisor
// has 2, a call's init (or a spare) 3.
std::size_t pid_namespace_depth(pid_t pid) {
  std::istringstream entries(sandgate::test::status_field(pid, "NSpid"));
  std::size_t depth = 0;
  for (std::string entry; entries >> entry;) ++depth;
  return depth;
}

// An init is a copy of its supervisor (forked, never exec'd); programs are exec'd.
bool is_init(pid_t pid) {
  return pid_namespace_depth(pid) == 3 &&
         sandgate::test::read_proc("/proc/" + std::to_string(pid) + "/cmdline")
                 .rfind("sandgate-supervisor", 0) == 0;
}

// The inits below this test process that run nothing.
std::vector<ProcessIdentity> idle_inits() {
  std::vector<ProcessIdentity> found;
  for (const auto& process : sandgate::test::descendants_of(::getpid()))
    if (is_init(process.pid) && sandgate::test::children_of(process.pid).empty())
      found.push_back(process);
  return found;
}

// The one idle init that appears within a few seconds (the supervisor makes it after the last
// call's init has gone); {} if none or several. Seen twice 50 ms apart: the last call's own
// init, which has written its status and has no children, is idle too for the moment before
// it exits.
ProcessIdentity spare_within(std::chrono::seconds limit) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  for (;;) {
    auto idle = idle_inits();
    if (idle.size() == 1) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      auto again = idle_inits();
      if (again.size() == 1 && again.front() == idle.front()) return idle.front();
    }
    if (std::chrono::steady_clock::now() >= deadline) return {};
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

// `pid`'s pid in its sandbox's namespace (the middle NSpid entry of an init), as a program of
// that sandbox sees it in /proc.
std::string pid_in_sandbox(pid_t pid) {
  std::istringstream entries(sandgate::test::status_field(pid, "NSpid"));
  std::vector<std::string> all;
  for (std::string entry; entries >> entry;) all.push_back(entry);
  return all.size() == 3 ? all[1] : "";
}

std::string describe(const RunResult& r) {
  return "exit " + std::to_string(r.exit_code) + ", outcome " +
         std::to_string(static_cast<int>(r.outcome)) + "\nstdout: " + r.stdout_text +
         "\nstderr: " + r.stderr_text + "\nfailure: " + r.failure;
}

}  // namespace

TEST_CASE("each spare init serves one call only, and a new one waits after it",
          "[sandbox][spare]") {
  sandgate::test::SandboxFixture f;
  if (!f.require_isolation()) return;
  auto sb = f.create();
  auto first = f.run(sb, Language::bash, "echo first");
  INFO(describe(first));
  REQUIRE(first.exit_code == 0);
  auto spare = spare_within(std::chrono::seconds(10));
  REQUIRE(spare.pid != 0);

  // The next call runs in it: the program's parent, as the sandbox's /proc shows it, is the
  // spare. And the spare ends with the call: it is not kept for another.
  auto spare_inside = pid_in_sandbox(spare.pid);
  REQUIRE_FALSE(spare_inside.empty());
  auto second = f.run(sb, Language::bash,
                      "while read -r key value; do [ \"$key\" = PPid: ] && echo \"$value\"; done "
                      "< /proc/self/status; true");
  INFO(describe(second));
  CHECK(second.exit_code == 0);
  CHECK(second.stdout_text == spare_inside + "\n");
  CHECK(gone_within(spare, std::chrono::seconds(10)));
  auto next = spare_within(std::chrono::seconds(10));
  CHECK(next.pid != 0);
  CHECK(next != spare);

  // An interpreter starts in a spare as well, and keeps its state between calls.
  auto defined = f.run(sb, Language::python, "x = 6 * 7");
  INFO(describe(defined));
  CHECK(defined.exit_code == 0);
  // The spare is the interpreter's init now: alive, with the interpreter below it.
  CHECK(sandgate::test::still_alive(next));
  CHECK_FALSE(sandgate::test::children_of(next.pid).empty());
  auto used = f.run(sb, Language::python, "print(x)");
  INFO(describe(used));
  CHECK(used.stdout_text == "42\n");
}

TEST_CASE("a spare init killed while it waited: the next call makes its own init",
          "[sandbox][spare]") {
  sandgate::test::SandboxFixture f;
  if (!f.require_isolation()) return;
  auto sb = f.create();
  REQUIRE(f.run(sb, Language::bash, "true").exit_code == 0);
  auto spare = spare_within(std::chrono::seconds(10));
  REQUIRE(spare.pid != 0);
  REQUIRE(::kill(spare.pid, SIGKILL) == 0);
  REQUIRE(gone_within(spare, std::chrono::seconds(10)));

  auto after = f.run(sb, Language::bash, "echo still here");
  INFO(describe(after));
  CHECK(after.exit_code == 0);
  CHECK(after.stdout_text == "still here\n");
  CHECK_FALSE(sb->ended());
  CHECK(spare_within(std::chrono::seconds(10)).pid != 0);
}

TEST_CASE("a spare init no call came for is dropped, and the next call makes its own",
          "[sandbox][spare]") {
  auto config = sandgate::test::SandboxFixture::default_config();
  config.spare_init_idle = std::chrono::milliseconds(300);
  sandgate::test::SandboxFixture f(config);
  if (!f.require_isolation()) return;
  auto sb = f.create();
  REQUIRE(f.run(sb, Language::bash, "true").exit_code == 0);
  auto spare = spare_within(std::chrono::seconds(10));
  REQUIRE(spare.pid != 0);
  CHECK(gone_within(spare, std::chrono::seconds(10)));
  // Not replaced while the sandbox stays idle.
  std::this_thread::sleep_for(std::chrono::milliseconds(600));
  CHECK(idle_inits().empty());

  auto after = f.run(sb, Language::bash, "echo again");
  INFO(describe(after));
  CHECK(after.stdout_text == "again\n");
}
