// The persistent interpreter on real sandboxes: state between calls, the documented result of an
// exception, an exit, a timeout, a cancel and the memory limit, and an interpreter whose own
// code attacks the channel it talks to the gateway through.
#include <boost/asio/steady_timer.hpp>
#include <catch2/catch.hpp>
#include <string>
#include <thread>

#include "sandbox_fixture.hpp"
#include "tests/support/host_probe.hpp"

using sandgate::sandbox::CallControl;
using sandgate::sandbox::Language;
using sandgate::sandbox::RunOutcome;
using sandgate::sandbox::RunRequest;
using sandgate::sandbox::RunResult;

using sandgate::test::gone_within;

namespace {

// The host's view of the process below this one whose pid in its own namespace is
// `pid_inside` (the last NSpid entry); {} if there is none.
sandgate::test::ProcessIdentity host_process_of(const std::string& pid_inside) {
  for (const auto& process : sandgate::test::descendants_of(::getpid())) {
    std::string nspid = sandgate::test::status_field(process.pid, "NSpid");
    auto last = nspid.find_last_of(" \t");
    if (nspid.substr(last == std::string::npos ? 0 : last + 1) == pid_inside) return process;
  }
  return {};
}

std::string describe(const RunResult& r) {
  return "exit " + std::to_string(r.exit_code) + ", outcome " +
         std::to_string(static_cast<int>(r.outcome)) + ", state_lost '" + r.state_lost +
         "'\nstdout: " + r.stdout_text + "\nstderr: " + r.stderr_text + "\nfailure: " + r.failure;
}

}  // namespace

TEST_CASE("python: variables, functions and imports survive between calls",
          "[sandbox][interpreter]") {
  sandgate::test::SandboxFixture f;
  if (!f.require_isolation()) return;
  auto sb = f.create();
  auto first = f.run(sb, Language::python, "import json\nx = 41\ndef twice(v):\n  return v * 2\n");
  INFO(describe(first));
  CHECK(first.persistent);
  CHECK(first.exit_code == 0);
  CHECK(first.stdout_text.empty());
  // The last expression is shown as the REPL shows it, after the call's own output.
  auto second = f.run(sb, Language::python, "print('before')\njson.dumps({'x': twice(x) + 1 - x})");
  INFO(describe(second));
  CHECK(second.stdout_text == "before\n'{\"x\": 42}'\n");
  CHECK(second.state_lost.empty());
  auto with_stdin = f.run(sb, Language::python, "import sys\nprint(sys.stdin.read().upper(), x)",
                          std::chrono::seconds(20), "abc");
  CHECK(with_stdin.stdout_text == "ABC 41\n");
  // A fresh process sees nothing of it, then the interpreter still has it.
  f.fresh = true;
  auto fresh = f.run(sb, Language::python, "print('x' in globals())");
  CHECK_FALSE(fresh.persistent);
  CHECK(fresh.stdout_text == "False\n");
  f.fresh = false;
  CHECK(f.run(sb, Language::python, "x").stdout_text == "41\n");
}

TEST_CASE("python: an exception keeps the state, an exit loses it and says so",
          "[sandbox][interpreter]") {
  sandgate::test::SandboxFixture f;
  if (!f.require_isolation()) return;
  auto sb = f.create();
  f.run(sb, Language::python, "kept = 'yes'");
  auto failed = f.run(sb, Language::python, "print('partial')\n{}['missing']");
  INFO(describe(failed));
  CHECK(failed.outcome == RunOutcome::completed);
  CHECK(failed.exit_code == 1);
  CHECK(failed.stdout_text == "partial\n");
  CHECK(failed.stderr_text.find("KeyError: 'missing'") != std::string::npos);
  CHECK(failed.stderr_text.find("{}['missing']") != std::string::npos);  // the cell's line
  CHECK(failed.state_lost.empty());
  CHECK(f.run(sb, Language::python, "kept").stdout_text == "'yes'\n");

  auto syntax = f.run(sb, Language::python, "def broken(:\n  pass");
  CHECK(syntax.exit_code == 1);
  CHECK(syntax.stderr_text.find("SyntaxError") != std::string::npos);

  auto exited = f.run(sb, Language::python, "import sys\nprint('bye')\nsys.exit(3)");
  INFO(describe(exited));
  CHECK(exited.outcome == RunOutcome::completed);
  CHECK(exited.exit_code == 3);
  CHECK(exited.stdout_text == "bye\n");
  CHECK(exited.state_lost == "the interpreter exited with code 3");
  auto after = f.run(sb, Language::python, "print('kept' in globals())");
  INFO(describe(after));
  CHECK(after.stdout_text == "False\n");
  CHECK(after.state_lost.empty());
}

TEST_CASE("python: a timeout interrupts the call, kills what it started, and keeps the state",
          "[sandbox][interpreter][limits]") {
  sandgate::test::SandboxFixture f;
  if (!f.require_isolation()) return;
  auto sb = f.create();
  // A background process of an earlier call follows the fresh path's rule: it lives on. (The
  // call's processes are told by their start time, in clock ticks: this one is a tick older.)
  f.run(sb, Language::python,
        "import subprocess, time\nstate = 7\n"
        "earlier = subprocess.Popen(['sleep', '300'], start_new_session=True)\ntime.sleep(0.05)");
  auto r = f.run(sb, Language::python,
                 "import subprocess, time\n"
                 "child = subprocess.Popen(['sleep', '300'], start_new_session=True)\n"
                 "print('started', flush=True)\n"
                 "time.sleep(60)",
                 std::chrono::seconds(3));  // room for Popen and the print on a loaded machine
  INFO(describe(r));
  CHECK(r.outcome == RunOutcome::timed_out);
  CHECK(r.stdout_text == "started\n");
  CHECK(r.state_lost.empty());
  auto after = f.run(sb, Language::python,
                     "import time\ntime.sleep(0.2)\n"
                     "print(state, child.poll() is not None, earlier.poll() is None)");
  INFO(describe(after));
  CHECK(after.stdout_text == "7 True True\n");
}

TEST_CASE("python: code that ignores the interrupt is killed with its interpreter, and said",
          "[sandbox][interpreter][limits]") {
  sandgate::test::SandboxFixture f;
  if (!f.require_isolation()) return;
  auto sb = f.create();
  f.run(sb, Language::python, "lost = True");
  auto r = f.run(sb, Language::python,
                 "import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nwhile True: pass",
                 std::chrono::seconds(1));
  INFO(describe(r));
  CHECK(r.outcome == RunOutcome::timed_out);
  CHECK(r.state_lost.find("did not stop") != std::string::npos);
  auto after = f.run(sb, Language::python, "print('lost' in globals())");
  INFO(describe(after));
  CHECK(after.stdout_text == "False\n");
  CHECK_FALSE(sb->ended());
}

TEST_CASE("python: code that makes the interrupt deadly loses the state, and says how",
          "[sandbox][interpreter][limits]") {
  sandgate::test::SandboxFixture f;
  if (!f.require_isolation()) return;
  auto sb = f.create();
  auto r =
      f.run(sb, Language::python,
            "import signal, time\nsignal.signal(signal.SIGINT, signal.SIG_DFL)\ntime.sleep(60)",
            std::chrono::seconds(1));
  INFO(describe(r));
  CHECK(r.outcome == RunOutcome::timed_out);
  CHECK(r.state_lost == "the interpreter was killed by signal 2 (Interrupt) at the interrupt");
  CHECK(f.run(sb, Language::python, "print('next')").stdout_text == "next\n");
}

TEST_CASE("python: a cancel interrupts the call like a timeout", "[sandbox][interpreter]") {
  sandgate::test::SandboxFixture f;
  if (!f.require_isolation()) return;
  auto sb = f.create();
  f.run(sb, Language::python, "total = 5");
  auto control = std::make_shared<CallControl>();
  boost::asio::steady_timer later(f.io(), std::chrono::milliseconds(500));
  later.async_wait([control](auto) { control->cancel(); });
  RunRequest request;
  request.code = "import time\nwhile True: time.sleep(0.01)";
  request.timeout = std::chrono::seconds(30);
  auto r = f.await(sb->run(request, control));
  INFO(describe(r));
  CHECK(r.outcome == RunOutcome::cancelled);
  CHECK(r.state_lost.empty());
  CHECK(f.run(sb, Language::python, "total").stdout_text == "5\n");
}

TEST_CASE("python: the memory limit kills the interpreter, and the next call has a new one",
          "[sandbox][interpreter][limits]") {
  sandgate::test::SandboxFixture f;
  if (!f.require_isolation()) return;
  auto sb = f.create();
  f.run(sb, Language::python, "before = 1");
  auto r =
      f.run(sb, Language::python, "x = bytearray(1 << 30)\nx[::4096] = b'a' * (len(x) // 4096)");
  INFO(describe(r));
  CHECK(r.outcome == RunOutcome::completed);
  CHECK(r.oom_killed);
  CHECK(r.state_lost == "the memory limit killed the interpreter");
  auto after = f.run(sb, Language::python, "print('before' in globals())");
  INFO(describe(after));
  CHECK(after.stdout_text == "False\n");
}

TEST_CASE("python: an interpreter that attacks its own channel costs only its state",
          "[sandbox][interpreter][hostile]") {
  sandgate::test::SandboxFixture f;
  if (!f.require_isolation()) return;
  auto sb = f.create();
  SECTION("a forged reply") {
    // The channel's write end is 1001 (the driver moves it there): a reply for another call.
    auto r = f.run(sb, Language::python,
                   "import os, struct\nos.write(1001, struct.pack('<IIIi', 0x50524753, 99, 0, 0))\n"
                   "import time\ntime.sleep(5)");
    INFO(describe(r));
    CHECK(r.state_lost == "the interpreter broke its protocol and was killed");
  }
  SECTION("garbage on the reply channel, and its stdout closed") {
    auto r =
        f.run(sb, Language::python, "import os\nos.close(1)\nos.write(1001, b'\\xff' * 100000)");
    INFO(describe(r));
    CHECK_FALSE(r.state_lost.empty());
  }
  SECTION("it kills itself") {
    auto r = f.run(sb, Language::python, "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)");
    INFO(describe(r));
    CHECK(r.exit_code == 137);
    CHECK(r.state_lost.find("signal 9") != std::string::npos);
  }
  SECTION("it exits between calls") {
    // It leaves once told to (a file appears); the host watches it go and be reaped (its
    // /proc entry lasts until then): no guess at how long that takes.
    auto r = f.run(sb, Language::python,
                   "import os, threading, time\n"
                   "def leave():\n"
                   "  while not os.path.exists('/work/leave'): time.sleep(0.01)\n"
                   "  os._exit(4)\n"
                   "threading.Thread(target=leave).start()\n"
                   "print(os.getpid())");
    CHECK(r.state_lost.empty());
    const std::string pid_inside = r.stdout_text.substr(0, r.stdout_text.find('\n'));
    auto interpreter = host_process_of(pid_inside);
    REQUIRE(interpreter.pid != 0);
    f.run(sb, Language::bash, "touch /work/leave");
    REQUIRE(gone_within(interpreter, std::chrono::seconds(20)));
    auto next = f.run(sb, Language::python, "print('fresh')");
    INFO(describe(next));
    CHECK(next.stdout_text == "fresh\n");
    CHECK(next.state_lost == "the interpreter exited with code 4 after the previous call");
  }
  SECTION("a flood between calls") {
    f.run(sb, Language::python,
          "import threading, sys\n"
          "def flood():\n  while True: sys.stdout.write('x' * 65536)\n"
          "threading.Thread(target=flood, daemon=True).start()");
    // The flood fills the pipe between calls; the next call reads it within its cap and ends.
    auto r = f.run(sb, Language::python, "print('done')");
    INFO(r.stdout_text.size());
    CHECK(r.outcome == RunOutcome::completed);
    CHECK(r.stdout_text.size() <= f.host().config().limits.output_bytes);
  }
  // Whatever it did, the sandbox serves the next call.
  auto after = f.run(sb, Language::python, "print('served')");
  INFO(describe(after));
  CHECK(after.outcome == RunOutcome::completed);
  CHECK(after.exit_code == 0);
  CHECK_FALSE(sb->ended());
}

TEST_CASE("javascript: declarations and awaited values survive between calls",
          "[sandbox][interpreter]") {
  sandgate::test::SandboxFixture f;
  if (!f.require_isolation()) return;
  auto sb = f.create();
  auto first =
      f.run(sb, Language::javascript,
            "const path = require('path');\nlet count = 1;\nfunction twice(v) { return v * 2; }\n"
            "class Box { constructor(v) { this.v = v; } }");
  INFO(describe(first));
  CHECK(first.persistent);
  CHECK(first.exit_code == 0);
  // A later call may declare the same const again, as in a REPL; the last value is inspected.
  auto second = f.run(sb, Language::javascript,
                      "const path = 'again';\ncount += await Promise.resolve(1);\n"
                      "console.log(path, twice(count));\nnew Box(count)");
  INFO(describe(second));
  CHECK(second.stdout_text == "again 4\nBox { v: 2 }\n");
  auto with_stdin =
      f.run(sb, Language::javascript,
            "let text = '';\nfor await (const chunk of process.stdin) text += chunk;\n"
            "console.log(text.toUpperCase(), count)",
            std::chrono::seconds(20), "abc");
  INFO(describe(with_stdin));
  CHECK(with_stdin.stdout_text == "ABC 2\n");
}

TEST_CASE("javascript: an exception keeps the state, a timeout interrupts, an exit loses it",
          "[sandbox][interpreter][limits]") {
  sandgate::test::SandboxFixture f;
  if (!f.require_isolation()) return;
  auto sb = f.create();
  f.run(sb, Language::javascript, "var kept = 'yes'");
  auto thrown = f.run(sb, Language::javascript, "console.log('partial');\nnull.property");
  INFO(describe(thrown));
  CHECK(thrown.exit_code == 1);
  CHECK(thrown.stdout_text == "partial\n");
  CHECK(thrown.stderr_text.find("TypeError") != std::string::npos);
  auto rejected = f.run(sb, Language::javascript, "await Promise.reject(new Error('nope'))");
  CHECK(rejected.exit_code == 1);
  CHECK(rejected.stderr_text.find("nope") != std::string::npos);
  // A busy loop and a promise that never settles are both interrupted, and the state stays.
  for (const char* code : {"while (true) {}", "await new Promise(() => {})"}) {
    auto r = f.run(sb, Language::javascript, code, std::chrono::seconds(1));
    INFO(code << "\n" << describe(r));
    CHECK(r.outcome == RunOutcome::timed_out);
    CHECK(r.state_lost.empty());
  }
  CHECK(f.run(sb, Language::javascript, "kept").stdout_text == "'yes'\n");
  auto exited = f.run(sb, Language::javascript, "console.log('bye');\nprocess.exit(4)");
  INFO(describe(exited));
  CHECK(exited.exit_code == 4);
  CHECK(exited.stdout_text == "bye\n");
  CHECK(exited.state_lost == "the interpreter exited with code 4");
  CHECK(f.run(sb, Language::javascript, "typeof kept").stdout_text == "'undefined'\n");
}
