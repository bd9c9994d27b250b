// The spend cap and the lifetime belong to the session, across every sandbox it has had: a
// sandbox that failed is replaced on the same account, and once the session's cap or lifetime
// is reached its calls get a clear error and no sandbox starts (no cgroup, no process).
#include <signal.h>

#include <thread>

#include "gateway_process.hpp"

using namespace sandgate::test;
using nlohmann::json;

namespace {

// About `seconds` of CPU time, then exits by itself.
std::string burn(double seconds) {
  return "import time\nt = time.process_time()\nwhile time.process_time() - t < " +
         std::to_string(seconds) + ": pass\nprint('burnt')";
}

// Kills the session's sandbox from outside (its supervisor), between calls.
void kill_sandbox(GatewayProcess& gw) {
  auto supervisors = children_of(gw.pid());
  REQUIRE(supervisors.size() == 1);
  ::kill(supervisors[0], SIGKILL);
}

// Prices that make a cap a number of CPU seconds ($1 per vCPU-second) and memory all but free:
// what a call costs then hardly depends on how long a loaded host takes to run it (memory is
// charged by the second held; a sanitizer build's supervisor holds a lot of it).
std::vector<std::string> cap_in_cpu_seconds(const std::string& seconds) {
  return {"--price-vcpu-hour", "3600", "--price-gib-hour", "0.000001", "--spend-cap-usd", seconds};
}

bool no_sandbox(GatewayProcess& gw) {
  return sandbox_cgroups_of(gw.pid()) == 0 && children_of(gw.pid()).empty();
}

}  // namespace

TEST_CASE("a session at its spend cap gets a clear error and starts no sandbox", "[spend]") {
  // A fresh sandbox's start and a print stay well under 1.5 s of CPU, even in a sanitizer build
  // (whose supervisor spends CPU in the same cgroup); the loop reaches it.
  GatewayProcess gw(cap_in_cpu_seconds("1.5"));
  std::string id = gw.initialize();
  auto capped = gw.execute(id, "while True: pass", "python", 30);
  CHECK(capped["isError"] == true);
  CHECK(tool_text(capped).find("spend cap") != std::string::npos);
  REQUIRE(eventually([&] { return no_sandbox(gw); }));
  // The next call: the session's cap is spent, so nothing starts (a fresh sandbox with a fresh
  // meter is what a session used to get here).
  auto next = gw.execute(id, "print('again')", "python");
  CHECK(next["isError"] == true);
  std::string said = tool_text(next);
  CHECK(said.find("can run no more code") != std::string::npos);
  CHECK(said.find("its $1.50 spend cap") != std::string::npos);
  CHECK(said.find("Start a new session") != std::string::npos);
  CHECK(no_sandbox(gw));
  // A new session has a cap of its own.
  std::string other = gw.initialize();
  auto fresh = gw.execute(other, "print('fresh')", "python");
  INFO(tool_text(fresh));
  CHECK(fresh["isError"] == false);
}

TEST_CASE("a failed sandbox is replaced on the same account, and the cap holds across both",
          "[spend]") {
  // 3.5 s of CPU: one 2 s burn with a second and a half to spare (a sanitizer build's supervisor
  // spends CPU in the same cgroup), less than two.
  GatewayProcess gw(cap_in_cpu_seconds("3.5"));
  std::string id = gw.initialize();
  auto first = gw.execute(id, burn(2), "python");
  INFO(tool_text(first));
  REQUIRE(first["isError"] == false);
  double spent = first["structuredContent"]["spend_usd"].get<double>();
  CHECK(spent > 0);
  kill_sandbox(gw);
  REQUIRE(eventually([&] { return sandbox_cgroups_of(gw.pid()) == 0; }));
  // A failure is not the cap: the next call runs, in a fresh sandbox (its /work is empty),
  // and the spend it reports is the session's, the first sandbox's included.
  auto fresh = gw.execute(id, "ls /work | wc -l", "bash");
  REQUIRE(fresh["isError"] == false);
  CHECK(fresh["structuredContent"]["stdout"] == "0\n");
  CHECK(fresh["structuredContent"]["spend_usd"].get<double>() >= spent);
  // A second burn crosses the session's cap, though this sandbox alone has spent less.
  auto crossing = gw.execute(id, burn(2), "python");
  CHECK(tool_text(crossing).find("spend cap") != std::string::npos);
  REQUIRE(eventually([&] { return no_sandbox(gw); }));
  auto after = gw.execute(id, "echo no", "bash");
  CHECK(after["isError"] == true);
  CHECK(tool_text(after).find("can run no more code") != std::string::npos);
  CHECK(no_sandbox(gw));
}

TEST_CASE("a session's lifetime holds across a failed sandbox", "[lifetime]") {
  GatewayProcess gw({"--sandbox-lifetime", "3"});
  std::string id = gw.initialize();
  // Taken once the session exists, so that it is older than this when the late call comes (on
  // an emulated host, initialize alone can take a good part of a second).
  auto made = std::chrono::steady_clock::now();
  REQUIRE(gw.execute(id, "echo one", "bash")["isError"] == false);
  kill_sandbox(gw);
  REQUIRE(eventually([&] { return sandbox_cgroups_of(gw.pid()) == 0; }));
  std::this_thread::sleep_until(made + std::chrono::milliseconds(3200));
  // A fresh sandbox would get a fresh lifetime: the session's is over, so none starts.
  auto late = gw.execute(id, "echo two", "bash");
  CHECK(late["isError"] == true);
  std::string said = tool_text(late);
  CHECK(said.find("lifetime of 3 s is over") != std::string::npos);
  CHECK(said.find("Start a new session") != std::string::npos);
  CHECK(no_sandbox(gw));
}

TEST_CASE("a sandbox handle at its spend cap is told to start a new sandbox", "[spend]") {
  // 2 s of CPU: the first call's sandbox start and echo stay well under it even in a sanitizer
  // build (whose supervisor spends CPU in the same cgroup); the loop reaches it.
  GatewayProcess gw(cap_in_cpu_seconds("2"));
  auto first = gw.call_stateless("execute", {{"code", "echo hi"}, {"language", "bash"}});
  INFO(tool_text(first));
  REQUIRE(first["isError"] == false);
  std::string handle = first["structuredContent"]["sandbox_id"];
  auto capped = gw.call_stateless(
      "execute", {{"code", "while True: pass"}, {"language", "python"}, {"sandbox_id", handle}});
  CHECK(capped["isError"] == true);
  CHECK(tool_text(capped).find("this sandbox reached its $2.00 spend cap") != std::string::npos);
  REQUIRE(eventually([&] { return no_sandbox(gw); }));
  auto after = gw.call_stateless(
      "execute", {{"code", "echo no"}, {"language", "bash"}, {"sandbox_id", handle}});
  CHECK(after["isError"] == true);
  std::string said = tool_text(after);
  CHECK(said.find("This sandbox can run no more code") != std::string::npos);
  CHECK(said.find("Omit sandbox_id to start a new sandbox.") != std::string::npos);
  CHECK(no_sandbox(gw));
}

TEST_CASE("end_sandbox does not reset a session's spend", "[spend]") {
  // 3.5 s of CPU: one 2 s burn with a second and a half to spare, less than two.
  GatewayProcess gw(cap_in_cpu_seconds("3.5"));
  std::string id = gw.initialize();
  auto first = gw.execute(id, burn(2), "python");
  INFO(tool_text(first));
  REQUIRE(first["isError"] == false);
  json end_sandbox = tool_call_message(7, "end_sandbox", json::object());
  auto ended = gw.post(end_sandbox, id);
  REQUIRE(ended.status == 200);
  CHECK(ended.json_body()["result"]["isError"] == false);
  REQUIRE(eventually([&] { return no_sandbox(gw); }));
  // The next sandbox gets what remains of the cap, not a fresh one: a second burn crosses it.
  auto crossing = gw.execute(id, burn(2), "python");
  CHECK(tool_text(crossing).find("spend cap") != std::string::npos);
  REQUIRE(eventually([&] { return no_sandbox(gw); }));
  CHECK(tool_text(gw.execute(id, "print(1)", "python")).find("can run no more code") !=
        std::string::npos);
  CHECK(no_sandbox(gw));
}
