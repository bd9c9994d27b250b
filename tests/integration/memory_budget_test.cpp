// The memory sandboxes share under a limit above the gateway (a container's, a systemd unit's):
// capped below it by --gateway-memory-reserve-mb, so an out-of-memory kill lands on a sandbox
// program inside that cap and never on the limit that would take the gateway with it
// (memory.oom.group=1 on a Kubernetes container). The VM stage repeats this in a real pod.
#include <filesystem>
#include <fstream>
#include <future>
#include <sstream>

#include "gateway_process.hpp"
#include "tests/support/host_probe.hpp"

using namespace sandgate::test;
using nlohmann::json;

TEST_CASE(
    "sandboxes that outgrow their shared budget: a sandbox program is killed, the gateway "
    "serves on",
    "[integration][memory]") {
  // 1536 MiB above us, 256 MiB kept: 1280 MiB for sandboxes, each allowed 1024 MiB.
  GatewayProcess gw({"--memory-limit-mb", "1536", "--memory-mb", "1024"});
  const std::string grow =
      "import time\nheld = []\nfor _ in range(20):\n held.append(bytearray(50 << 20))\n "
      "time.sleep(0.2)\nprint('grew')";
  std::string a = gw.initialize(), b = gw.initialize();
  auto first =
      std::async(std::launch::async, [&] { return gw.call_execute(a, grow, "python", 120); });
  auto second =
      std::async(std::launch::async, [&] { return gw.call_execute(b, grow, "python", 120); });
  int killed = 0;
  for (auto* call : {&first, &second}) {
    auto reply = call->get();
    REQUIRE(reply.status == 200);
    INFO("reply: " << reply.body.substr(0, 500));
    auto result = reply.json_body()["result"];
    CHECK(result["isError"] == false);  // a result the model reads, not a gateway failure
    killed += result["structuredContent"]["oom_killed"] == true ? 1 : 0;
  }
  CHECK(killed >= 1);
  CHECK(gw.request(boost::beast::http::verb::get, "/healthz").status == 200);
  CHECK(gw.execute(a, "print('still here')")["structuredContent"]["stdout"] == "still here\n");
}

namespace {

// Starts, in `session`'s sandbox, a program holding 1870 MiB (every page touched) in the
// background or, with `foreground`, in a call that runs until the gateway stops; returns once
// the memory is held. 2304 MiB above us, 256 kept: 2048 MiB for sandboxes, full from 1843 MiB
// on; with what python and the supervisor take (more on a sanitizer build, whose supervisor is
// the instrumented gateway binary) it stays below 2048.
const char* kHold =
    "python3 -c 'import time; b = bytearray(1870 << 20); b[::4096] = b\"x\" * "
    "len(b[::4096]); print(\"held\", flush=True); time.sleep(120)' > /tmp/held";

json hold_in_background(GatewayProcess& gw, const std::string& session) {
  return gw.execute(session,
                    std::string("echo mine > /work/mine\n") + kHold +
                        " &\nuntil grep -q held /tmp/held; do sleep 0.1; done; echo started",
                    "bash", 120);
}

// The resident MiB of the largest holder program (kHold) running on this host; 0 when none.
long held_by_python_mib() {
  long most = 0;
  for (const auto& entry : sandgate::test::proc_entries("/proc")) {
    std::string text = sandgate::test::read_proc(entry / "cmdline");
    if (text.find("bytearray(1870 << 20)") == std::string::npos) continue;
    std::istringstream status(sandgate::test::read_proc(entry / "status"));
    for (std::string line; std::getline(status, line);)
      if (line.rfind("VmRSS:", 0) == 0) most = std::max(most, std::stol(line.substr(6)) >> 10);
  }
  return most;
}

}  // namespace

TEST_CASE("near the shared memory budget the idle sandbox holding it is hibernated for a new one",
          "[integration][memory][hibernate][pressure]") {
  GatewayProcess gw(
      {"--memory-limit-mb", "2304", "--memory-mb", "2100", "--sandbox-hibernate-after", "3600"});
  std::string holder = gw.initialize(), late = gw.initialize();
  auto held = hold_in_background(gw, holder);
  INFO("holder: " << held.dump().substr(0, 500));
  REQUIRE(held["isError"] == false);
  REQUIRE(held["structuredContent"]["stdout"] == "started\n");

  // The holder has no call running: it is hibernated (its program ends, its /work is kept).
  auto ran = gw.execute(late, "print('hi')");
  INFO("late: " << ran.dump().substr(0, 500));
  CHECK(ran["isError"] == false);
  CHECK(ran["structuredContent"]["stdout"] == "hi\n");
  CHECK(metric(gw, "sandgate_hibernations_total{reason=\"memory_budget\"}") == 1);
  CHECK(metric(gw, "sandgate_sandboxes_hibernated") == 1);
  // Its /work came back; its program and /tmp did not.
  auto back = gw.execute(holder, "cat /work/mine; ls /tmp", "bash");
  CHECK(back["structuredContent"]["stdout"] == "mine\n");
  CHECK(held_by_python_mib() == 0);
  CHECK(back["structuredContent"]["resumed"].get<std::string>().find("files in /work are kept") !=
        std::string::npos);
}

TEST_CASE("a new sandbox is refused while busy sandboxes hold the whole shared budget",
          "[integration][memory][pressure]") {
  GatewayProcess gw({"--memory-limit-mb", "2304", "--memory-mb", "2100", "--timeout-max", "300"});
  std::string holder = gw.initialize(), late = gw.initialize();
  // The holder's call runs (holding the memory) until the gateway stops: nothing can make room.
  auto running = std::async(std::launch::async, [&] {
    return gw.call_execute(holder, std::string(kHold) + "; sleep 300", "bash", 300);
  });
  struct StopFirst {
    GatewayProcess& gw;
    ~StopFirst() {
      if (gw.pid() > 0) gw.stop(SIGTERM);
    }
  } stop_first{gw};
  REQUIRE(eventually([&] { return held_by_python_mib() >= 1870; }, std::chrono::seconds(60)));
  auto refused = gw.execute(late, "print('hi')");
  CHECK(refused["isError"] == true);
  CHECK(refused["content"][0]["text"].get<std::string>().find("shared memory budget") !=
        std::string::npos);
  CHECK(metric(gw, "sandgate_hibernations_total{reason=\"memory_budget\"}") == 0);
  CHECK(metric(gw, "sandgate_sandboxes_evicted_total{reason=\"memory_budget\"}") == 0);
  // Once the holder's session ends, there is room again.
  gw.request(boost::beast::http::verb::delete_, "/mcp", "", GatewayProcess::mcp_headers(holder));
  CHECK(eventually([&] {
    auto r = gw.call_execute(late, "print('hi')");
    return r.status == 200 && r.json_body()["result"]["isError"] == false;
  }));
}
