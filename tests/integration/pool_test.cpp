// The pool of ready sandboxes on the real binary (issue #29): a ready sandbox goes to exactly one
// new session and carries nothing but its preloaded modules; its build is the operator's cost;
// it honours the limits of the tenant it goes to; at the sandbox cap the pool gives way instead
// of an idle session, and refills once there is room; a hibernated sandbox resumes into a ready
// one with its files.
#include <signal.h>

#include <filesystem>
#include <future>
#include <thread>

#include "cpu_priced.hpp"
#include "gateway_process.hpp"
#include "tests/sandbox/limit_cgroup.hpp"
#include "tests/support/skip.hpp"
#include "two_tenant_dir.hpp"

using namespace sandgate::test;
using nlohmann::json;

namespace {

// tools/call execute in `session` as `token`'s tenant; the CallToolResult. Safe on any thread.
json call(GatewayProcess& gw, const std::string& session, const std::string& token,
          const std::string& code, int id = 1) {
  auto r = gw.post(tool_call_message(id, "execute", execute_arguments(code, "python", 120)),
                   session, token);
  if (r.status != 200) return {{"isError", true}, {"status", r.status}};
  std::string body = r.body;
  auto data = body.rfind("data: ");
  if (data != std::string::npos) body = body.substr(data + 6, body.find('\n', data) - data - 6);
  return json::parse(body)["result"];
}

std::string stdout_of(const json& result) {
  if (!result.contains("structuredContent")) return "";
  return result["structuredContent"].value("stdout", "");
}

// Waits (up to two minutes: the preload imports pandas and matplotlib, slow on a loaded
// machine) until the pool holds `ready` sandboxes.
bool pool_holds(GatewayProcess& gw, long ready) {
  return eventually([&] { return metric(gw, "sandgate_pool_ready") == ready; },
                    std::chrono::seconds(120));
}

// With no session yet, every python3 below the gateway is a ready sandbox's interpreter.
std::vector<ProcessIdentity> ready_interpreters(GatewayProcess& gw) {
  std::vector<ProcessIdentity> found;
  for (const auto& process : descendants_of(gw.pid()))
    if (read_proc("/proc/" + std::to_string(process.pid) + "/comm") == "python3\n")
      found.push_back(process);
  return found;
}

bool has_data_stack() {
  for (const char* module : {"numpy", "pandas", "matplotlib"})
    if (!std::filesystem::exists(std::string("/usr/lib/python3/dist-packages/") + module)) {
      skip_test("numpy", std::string("python3-") + module + " is not installed");
      return false;
    }
  return true;
}

// What a sandbox's first cell reports about what it was handed: the names in its namespace,
// /work's entries, whether the preload's modules are loaded, whether the preload's cache
// variables leaked, and the host uid its programs run as.
const char* kWhatWasHanded =
    "import os, sys\n"
    "names = sorted(k for k in globals() if not k.startswith('__') and k not in ('os', 'sys'))\n"
    "print(names, os.listdir('/work'), 'pandas' in sys.modules,\n"
    "      'matplotlib.pyplot' in sys.modules,\n"
    "      [v for v in ('MPLCONFIGDIR', 'XDG_CACHE_HOME') if v in os.environ],\n"
    "      open('/proc/self/uid_map').read().split()[1])\n";

}  // namespace

TEST_CASE("a ready sandbox goes to one new session with nothing but its preloaded modules",
          "[integration][pool]") {
  if (!has_data_stack()) return;
  TwoTenantDir dir("pool-handed");
  // $1 per CPU-second: the preload's imports (most of a CPU-second) would show in the first
  // call's spend if the session were charged for the build.
  GatewayProcess gw(cpu_priced(dir, {"--pool-size", "1"}));
  REQUIRE(pool_holds(gw, 1));
  CHECK(metric(gw, "sandgate_pool_size") == 1);
  CHECK(metric(gw, "sandgate_pool_refills_total{result=\"ok\"}") == 1);
  CHECK(metric(gw, "sandgate_sandboxes") == 0);  // a ready sandbox is nobody's yet

  std::string session = gw.initialize("tok-a");
  auto first = call(gw, session, "tok-a", kWhatWasHanded);
  INFO(first.dump());
  REQUIRE(first["isError"] == false);
  std::string said = stdout_of(first);
  // An empty namespace and /work, the data stack already imported, no trace of the preload.
  CHECK(said.rfind("[] [] True True [] ", 0) == 0);
  CHECK(metric(gw, "sandgate_pool_takes_total{result=\"hit\"}") == 1);
  CHECK(metric(gw, "sandgate_sandboxes") == 1);
  // The session pays from the hand-over: this call's few milliseconds, not the imports.
  CHECK(first["structuredContent"]["spend_usd"].get<double>() < 0.1);

  // The session keeps its sandbox (the pool's replacement is another one, for someone else).
  auto second =
      call(gw, session, "tok-a", "import pandas\nprint(len(pandas.DataFrame({'a': [1, 2]})))", 2);
  CHECK(stdout_of(second) == "2\n");
  CHECK(metric(gw, "sandgate_pool_takes_total{result=\"hit\"}") == 1);

  // The replacement: built in the background, and its host uid is not the first one's.
  REQUIRE(pool_holds(gw, 1));
  std::string other = gw.initialize("tok-b");
  auto theirs = call(gw, other, "tok-b", kWhatWasHanded, 3);
  CHECK(stdout_of(theirs).rfind("[] [] True True [] ", 0) == 0);
  auto uid = [](const std::string& text) { return text.substr(text.rfind(' ') + 1); };
  CHECK(uid(stdout_of(theirs)) != uid(said));
  CHECK(metric(gw, "sandgate_pool_takes_total{result=\"hit\"}") == 2);
}

TEST_CASE("two tenants racing for the last ready sandbox each get a sandbox of their own",
          "[integration][pool]") {
  if (!has_data_stack()) return;
  TwoTenantDir dir("pool-race");
  GatewayProcess gw({"--token-file", dir.tokens.string(), "--pool-size", "1"}, {});
  REQUIRE(pool_holds(gw, 1));
  std::string a = gw.initialize("tok-a"), b = gw.initialize("tok-b");
  const std::string code =
      "import os\nopen('/work/mine', 'w').write(str(os.getpid()))\n"
      "print(os.listdir('/work'), open('/proc/self/uid_map').read().split()[1])";
  auto ran_a = std::async(std::launch::async, [&] { return call(gw, a, "tok-a", code); });
  auto ran_b = std::async(std::launch::async, [&] { return call(gw, b, "tok-b", code); });
  json result_a = ran_a.get(), result_b = ran_b.get();
  INFO(result_a.dump() << "\n" << result_b.dump());
  REQUIRE(result_a["isError"] == false);
  REQUIRE(result_b["isError"] == false);
  std::string said_a = stdout_of(result_a), said_b = stdout_of(result_b);
  // Each sees only its own file, and runs as a host uid of its own.
  CHECK(said_a.rfind("['mine'] ", 0) == 0);
  CHECK(said_b.rfind("['mine'] ", 0) == 0);
  CHECK(said_a != said_b);
  long hits = metric(gw, "sandgate_pool_takes_total{result=\"hit\"}");
  long misses = metric(gw, "sandgate_pool_takes_total{result=\"miss\"}");
  CHECK(hits >= 1);
  CHECK(hits + misses == 2);
  CHECK(metric(gw, "sandgate_sandboxes") == 2);
}

TEST_CASE("a ready sandbox honours the spend cap and memory limit of the session it goes to",
          "[integration][pool]") {
  if (!has_data_stack()) return;
  // Tenant a's sessions may spend $0.30; memory per sandbox 256 MiB.
  TwoTenantDir dir("pool-limits", "spend_cap_usd=0.3");
  GatewayProcess gw(cpu_priced(dir, {"--pool-size", "1", "--memory-mb", "256"}));
  REQUIRE(pool_holds(gw, 1));
  std::string a = gw.initialize("tok-a");
  auto stopped = call(gw, a, "tok-a", cpu_burn(3));
  INFO(stopped.dump());
  CHECK(stopped["isError"] == true);
  CHECK(tool_text(stopped).find("spend cap") != std::string::npos);
  CHECK(metric(gw, "sandgate_pool_takes_total{result=\"hit\"}") == 1);

  REQUIRE(pool_holds(gw, 1));
  std::string b = gw.initialize("tok-b");
  auto big = call(gw, b, "tok-b",
                  "x = bytearray(400 << 20)\nx[::4096] = b'x' * len(x[::4096])\nprint('held')", 2);
  INFO(big.dump());
  CHECK(stdout_of(big).find("held") == std::string::npos);
  CHECK(big["structuredContent"]["oom_killed"] == true);
  CHECK(metric(gw, "sandgate_pool_takes_total{result=\"hit\"}") == 2);
}

TEST_CASE("a ready sandbox whose interpreter died while it waited is not handed out",
          "[integration][pool]") {
  // A light preload: this is about the interpreter's process, not what it imported.
  GatewayProcess gw({"--pool-size", "1", "--pool-preload", "json"});
  REQUIRE(pool_holds(gw, 1));
  // Killed as the memory limit's OOM kill would end it.
  auto interpreters = ready_interpreters(gw);
  REQUIRE(interpreters.size() == 1);
  REQUIRE(::kill(interpreters[0].pid, SIGKILL) == 0);
  REQUIRE(eventually([&] { return !still_alive(interpreters[0]); }, std::chrono::seconds(10)));

  std::string session = gw.initialize();
  auto first = gw.execute(session, "print(40 + 2)");
  INFO(first.dump());
  CHECK(first["isError"] == false);
  CHECK(stdout_of(first) == "42\n");
  // Not told that state was lost: the session never had any.
  CHECK_FALSE(first["structuredContent"].contains("state_lost"));
  CHECK(metric(gw, "sandgate_pool_takes_total{result=\"hit\"}") == 0);
  CHECK(metric(gw, "sandgate_pool_takes_total{result=\"miss\"}") == 1);
  // The refused one was ended; a new one takes its place.
  CHECK(pool_holds(gw, 1));
}

TEST_CASE(
    "a ready sandbox warms up with a background share of the CPU, its session gets the default",
    "[integration][pool]") {
  GatewayProcess gw({"--pool-size", "1", "--pool-preload", "json"});
  REQUIRE(pool_holds(gw, 1));
  auto interpreters = ready_interpreters(gw);
  REQUIRE(interpreters.size() == 1);
  pid_t interpreter = interpreters[0].pid;
  // The sandbox's cpu cgroup: the one with its quota.
  auto dir = limiting_cgroup(interpreter, "cpu", {"cpu.cfs_quota_us", "-1"}, {"cpu.max", "max"});
  if (dir.empty()) {
    skip_test("cgroups", "no cpu cgroup holds the sandbox's quota");
    return;
  }
  const bool v2 = std::filesystem::exists(dir / "cpu.weight");
  auto share = [&] { return read_proc((dir / (v2 ? "cpu.weight" : "cpu.shares")).string()); };
  CHECK(share() == (v2 ? "10\n" : "102\n"));

  std::string session = gw.initialize();
  auto first = gw.execute(session, "print(1)");
  CHECK(stdout_of(first) == "1\n");
  CHECK(metric(gw, "sandgate_pool_takes_total{result=\"hit\"}") == 1);
  CHECK(share() == (v2 ? "100\n" : "1024\n"));
}

TEST_CASE("the pool refills after a burst, and at the sandbox cap gives way instead of evicting",
          "[integration][pool]") {
  if (!has_data_stack()) return;
  TwoTenantDir dir("pool-burst");
  // Hibernation off: at the cap, an idle session's sandbox would be ended (and counted) to make
  // room — unless the pool's ready sandboxes, or the one being built, give way first.
  GatewayProcess gw({"--token-file", dir.tokens.string(), "--pool-size", "2", "--max-sandboxes",
                     "4", "--tenant-max-sandboxes", "4", "--sandbox-hibernate-after", "0"},
                    {});
  REQUIRE(pool_holds(gw, 2));
  // One after another: each takes a ready sandbox or the slot the pool held for one (a build
  // in progress included), never an idle session's.
  std::vector<std::string> sessions;
  for (int i = 0; i < 4; ++i) {
    sessions.push_back(gw.initialize("tok-a"));
    auto ran = call(gw, sessions.back(), "tok-a", "print('ok')", i + 1);
    INFO(ran.dump());
    CHECK(stdout_of(ran) == "ok\n");
  }
  CHECK(metric(gw, "sandgate_sandboxes") == 4);
  CHECK(metric(gw, "sandgate_pool_ready") == 0);  // no slot to spare: nothing is built
  CHECK(metric(gw, "sandgate_sandboxes_evicted_total{reason=\"sandbox_cap\"}") == 0);
  CHECK(metric(gw, "sandgate_pool_takes_total{result=\"hit\"}") >= 2);
  // A burst at once, in the same four sessions: their own sandboxes, nothing evicted.
  std::vector<std::future<json>> burst;
  for (const auto& s : sessions)
    burst.push_back(std::async(std::launch::async, [&gw, s] {
      return call(gw, s, "tok-a", "import time\ntime.sleep(1)\nprint('again')", 9);
    }));
  for (auto& f : burst) CHECK(stdout_of(f.get()) == "again\n");
  CHECK(metric(gw, "sandgate_sandboxes_evicted_total{reason=\"sandbox_cap\"}") == 0);
  // The sessions end: the pool refills to its size.
  for (const auto& s : sessions)
    gw.request(http::verb::delete_, "/mcp", "", GatewayProcess::mcp_headers(s, "tok-a"));
  CHECK(pool_holds(gw, 2));
  CHECK(metric(gw, "sandgate_sandboxes") == 0);
}

TEST_CASE("a hibernated sandbox resumes into a ready one with its files", "[integration][pool]") {
  if (!has_data_stack()) return;
  TwoTenantDir dir("pool-resume");
  GatewayProcess gw({"--token-file", dir.tokens.string(), "--pool-size", "1",
                     "--sandbox-hibernate-after", "2", "--state-dir", dir.state.string()},
                    {});
  REQUIRE(pool_holds(gw, 1));
  std::string a = gw.initialize("tok-a");
  auto wrote = call(gw, a, "tok-a", "open('/work/keep.txt', 'w').write('kept')\nprint('ok')");
  REQUIRE(stdout_of(wrote) == "ok\n");
  REQUIRE(eventually([&] { return metric(gw, "sandgate_sandboxes_hibernated") == 1; },
                     std::chrono::seconds(60)));
  REQUIRE(pool_holds(gw, 1));
  long hits = metric(gw, "sandgate_pool_takes_total{result=\"hit\"}");
  auto resumed = call(gw, a, "tok-a",
                      "import os, sys\nprint(open('/work/keep.txt').read(), os.listdir('/work'), "
                      "'pandas' in sys.modules)",
                      2);
  INFO(resumed.dump());
  CHECK(stdout_of(resumed) == "kept ['keep.txt'] True\n");
  CHECK(resumed.dump().find("resumed from hibernation") != std::string::npos);
  CHECK(metric(gw, "sandgate_pool_takes_total{result=\"hit\"}") == hits + 1);
}

// Issue #41: "never serves twice" was untested. A sandbox that served a session, whichever way
// it ended (end_sandbox, DELETE of its session), is never handed to another session, nor back
// to its own: each ready sandbox taken afterwards shows nothing of the first one's use.
TEST_CASE("a sandbox that served a session never serves another", "[integration][pool]") {
  if (!has_data_stack()) return;
  TwoTenantDir dir("pool-once");
  GatewayProcess gw({"--token-file", dir.tokens.string(), "--pool-size", "1"}, {});
  const std::string leave_traces =
      "served = 'sandgate-served-marker'\n"
      "open('/work/served', 'w').write(served)\n"
      "open('/tmp/served', 'w').write(served)\n"
      "print('left')\n";
  const std::string look =
      "import os\n"
      "print('served' in globals(), os.listdir('/work'), os.path.exists('/tmp/served'))\n";
  auto clean = [](const json& result) {
    INFO(result.dump());
    CHECK(stdout_of(result) == "False [] False\n");
  };

  // a's session takes the ready sandbox and uses it; then ends it with end_sandbox.
  REQUIRE(pool_holds(gw, 1));
  std::string a = gw.initialize("tok-a");
  REQUIRE(stdout_of(call(gw, a, "tok-a", leave_traces, 1)) == "left\n");
  CHECK(metric(gw, "sandgate_pool_takes_total{result=\"hit\"}") == 1);
  auto ended = gw.post(tool_call_message(2, "end_sandbox", json::object()), a, "tok-a");
  REQUIRE(ended.status == 200);

  // b's new session takes the next ready one: a fresh sandbox, not a's.
  REQUIRE(pool_holds(gw, 1));
  std::string b = gw.initialize("tok-b");
  clean(call(gw, b, "tok-b", look, 3));
  CHECK(metric(gw, "sandgate_pool_takes_total{result=\"hit\"}") == 2);
  // a's next call gets a sandbox again (a ready one), with nothing of its old one either.
  REQUIRE(pool_holds(gw, 1));
  clean(call(gw, a, "tok-a", look, 4));
  CHECK(metric(gw, "sandgate_pool_takes_total{result=\"hit\"}") == 3);

  // b's sandbox, used and its session deleted: the next session's is fresh too.
  REQUIRE(stdout_of(call(gw, b, "tok-b", leave_traces, 5)) == "left\n");
  CHECK(
      gw.request(http::verb::delete_, "/mcp", "", GatewayProcess::mcp_headers(b, "tok-b")).status ==
      200);
  REQUIRE(pool_holds(gw, 1));
  std::string c = gw.initialize("tok-b");
  clean(call(gw, c, "tok-b", look, 6));
  CHECK(metric(gw, "sandgate_pool_takes_total{result=\"hit\"}") == 4);
}
