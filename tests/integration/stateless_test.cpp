// 2026-07-28 clients on the real binary: no session, state kept in a sandbox handle the model
// passes back; the handle belongs to its tenant, ends on request or when idle, and a client
// closing its response stream cancels the call without losing the sandbox.
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <future>
#include <thread>

#include "auth/token_store.hpp"
#include "gateway_process.hpp"

using namespace sandgate::test;
using nlohmann::json;

namespace {

std::string stdout_of(const json& result) {
  return result["structuredContent"]["stdout"].get<std::string>();
}
std::string text_of(const json& result) {
  return result["content"][0]["text"].get<std::string>();
}
json bash(const std::string& code, const std::string& sandbox_id = {}) {
  json args = {{"code", code}, {"language", "bash"}};
  if (!sandbox_id.empty()) args["sandbox_id"] = sandbox_id;
  return args;
}

// A tokens file naming tenants a and b, removed at the end.
struct TwoTenants {
  std::filesystem::path path =
      std::filesystem::temp_directory_path() / ("sandgate-stateless-" + std::to_string(::getpid()));
  TwoTenants() {
    std::ofstream(path) << sandgate::auth::to_hex(sandgate::auth::sha256("tok-a")) << " a\n"
                        << sandgate::auth::to_hex(sandgate::auth::sha256("tok-b")) << " b\n";
    ::chmod(path.c_str(), 0600);
  }
  ~TwoTenants() { std::filesystem::remove(path); }
};

// Starts a call on `handle` through `entry` that ticks a counter in /work, closes its
// connection once the program runs (its first tick written), and checks through `check` that the
// program stopped while the sandbox and its files stayed. Its timeout (120 s) is longer than the
// next request waits for its answer (60 s): only a cancel lets the next call run in time.
void expect_cancelled_by_close(GatewayProcess& entry, GatewayProcess& check,
                               const std::string& handle) {
  json long_call =
      bash("i=0; while true; do echo $i > /work/tick; i=$((i+1)); sleep 0.11; done", handle);
  long_call["timeout_seconds"] = 120;
  json started = stateless_tool_call("execute", long_call);
  REQUIRE(entry.post_and_close_when(started,
                                    GatewayProcess::stateless_headers(started, "test-token"),
                                    [] { return sandboxed_running("sleep 0.11") >= 1; }));
  // Calls of one sandbox run one at a time: this one runs only once the long one has ended.
  json message = stateless_tool_call("execute", bash("cat /work/tick; cat /work/kept", handle));
  auto pending = std::async(std::launch::async, [&] {
    return check.request(http::verb::post, "/mcp", message.dump(),
                         GatewayProcess::stateless_headers(message, "test-token"));
  });
  REQUIRE(pending.wait_for(std::chrono::seconds(60)) == std::future_status::ready);
  json first = pending.get().json_body()["result"];
  REQUIRE(first["isError"] == false);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  auto second = check.call_stateless("execute", bash("cat /work/tick", handle));
  std::string tick = stdout_of(first).substr(0, stdout_of(first).find('\n'));
  CHECK(stdout_of(first).find("before") != std::string::npos);
  CHECK(stdout_of(second) == tick + "\n");  // nothing ticks any more
}

}  // namespace

TEST_CASE("a 2026-07-28 client keeps /work through its sandbox handle, and ends it",
          "[integration][stateless]") {
  GatewayProcess gw({});
  auto first = gw.call_stateless("execute", bash("echo kept > /work/note; echo made"));
  REQUIRE(first["isError"] == false);
  std::string handle = first["structuredContent"]["sandbox_id"];
  CHECK(handle.rfind("sbx_", 0) == 0);
  CHECK(text_of(first).find(handle) != std::string::npos);  // the model reads it in the text too

  auto again = gw.call_stateless("execute", bash("cat /work/note", handle));
  CHECK(stdout_of(again) == "kept\n");
  CHECK(again["structuredContent"]["sandbox_id"] == handle);

  // Without the handle: another, new sandbox.
  auto fresh = gw.call_stateless("execute", bash("ls /work | wc -l"));
  CHECK(stdout_of(fresh) == "0\n");
  CHECK(fresh["structuredContent"]["sandbox_id"] != handle);

  auto ended = gw.call_stateless("end_sandbox", {{"sandbox_id", handle}});
  CHECK(ended["isError"] == false);
  auto after = gw.call_stateless("execute", bash("cat /work/note", handle));
  CHECK(after["isError"] == true);
  CHECK(text_of(after).find("ended by end_sandbox") != std::string::npos);
  CHECK(text_of(after).find("Omit sandbox_id") != std::string::npos);
}

TEST_CASE("a sandbox handle belongs to its tenant", "[integration][stateless][tenants]") {
  TwoTenants tokens;
  GatewayProcess gw({"--token-file", tokens.path.string()}, {});
  auto made = gw.call_stateless("execute", bash("echo secret > /work/s"), "tok-a");
  std::string handle = made["structuredContent"]["sandbox_id"];
  // Another tenant holding the id gets what a made-up id gets: nothing to tell them apart.
  auto theirs = gw.call_stateless("execute", bash("cat /work/s", handle), "tok-b");
  CHECK(theirs["isError"] == true);
  CHECK(text_of(theirs).find("is unknown or has ended") != std::string::npos);
  CHECK(gw.call_stateless("end_sandbox", {{"sandbox_id", handle}}, "tok-b")["isError"] == true);
  // Still the owner's.
  CHECK(stdout_of(gw.call_stateless("execute", bash("cat /work/s", handle), "tok-a")) ==
        "secret\n");
}

TEST_CASE("closing the response stream cancels a 2026-07-28 call, and its sandbox stays",
          "[integration][stateless][cancel]") {
  GatewayProcess gw({});
  std::string handle = gw.call_stateless(
      "execute", bash("echo before > /work/kept"))["structuredContent"]["sandbox_id"];
  expect_cancelled_by_close(gw, gw, handle);
}

TEST_CASE("notifications/cancelled reaches a 2025 session's call that runs in a sandbox handle",
          "[integration][stateless][cancel]") {
  GatewayProcess gw({});
  std::string handle =
      gw.call_stateless("execute", bash("true"))["structuredContent"]["sandbox_id"];
  std::string session = gw.initialize();
  json long_call = bash("sleep 100", handle);
  long_call["timeout_seconds"] = 120;
  auto running = std::async(std::launch::async, [&] {
    return gw.post(tool_call_message(7, "execute", long_call), session);
  });
  // A cancel for a request the gateway has not yet seen is dropped: wait for its program.
  REQUIRE(eventually([] { return sandboxed_running("sleep 100") == 1; }));
  CHECK(gw.post({{"jsonrpc", "2.0"},
                 {"method", "notifications/cancelled"},
                 {"params", {{"requestId", 7}}}},
                session)
            .status == 202);
  // A cancelled request gets no response: 202, and nothing more.
  REQUIRE(running.wait_for(std::chrono::seconds(60)) == std::future_status::ready);
  CHECK(running.get().status == 202);
}

TEST_CASE("a handle made for a call that never ran is not left holding a place",
          "[integration][stateless]") {
  // One slot and no queue: while a call runs, a new one is refused as busy.
  GatewayProcess gw({"--max-concurrent-calls", "1", "--max-queued-calls", "0"});
  std::string handle =
      gw.call_stateless("execute", bash("true"))["structuredContent"]["sandbox_id"];
  json long_call = bash("sleep 10", handle);
  auto running = std::async(std::launch::async, [&] {
    json message = stateless_tool_call("execute", long_call);
    return gw.request(http::verb::post, "/mcp", message.dump(),
                      GatewayProcess::stateless_headers(message, "test-token"));
  });
  // The long call holds the slot once its program runs.
  REQUIRE(eventually([] { return sandboxed_running("sleep 10") == 1; }));
  auto busy = gw.call_stateless("execute", bash("true"));
  CHECK(busy["isError"] == true);
  CHECK(text_of(busy).find("busy") != std::string::npos);
  running.get();
  // Only the first handle is open: the busy call's handle, whose id nobody saw, is gone.
  auto metrics = gw.request(http::verb::get, "/metrics").body;
  CHECK(metrics.find("\nsandgate_sessions 1\n") != std::string::npos);
  CHECK(metrics.find("\nsandgate_sandbox_handles 1\n") != std::string::npos);
}

TEST_CASE("an idle sandbox handle ends, and the model is told why", "[integration][stateless]") {
  GatewayProcess gw({"--session-idle-timeout", "1"});
  std::string handle =
      gw.call_stateless("execute", bash("true"))["structuredContent"]["sandbox_id"];
  // Ended by the sweep (a call before it would keep the handle alive).
  REQUIRE(eventually([&] {
    return gw.request(http::verb::get, "/metrics").body.find("\nsandgate_sandbox_handles 0\n") !=
           std::string::npos;
  }));
  auto late = gw.call_stateless("execute", bash("true", handle));
  CHECK(late["isError"] == true);
  CHECK(text_of(late).find("has ended (it was idle for 1 s)") != std::string::npos);
}

TEST_CASE(
    "a handle's call forwarded to its replica is cancelled when the client goes, and a "
    "handle whose replica is gone is a tool error",
    "[integration][stateless][replicas][cancel]") {
  int pa = free_port(), pb = free_port();
  std::string peers =
      "a=http://127.0.0.1:" + std::to_string(pa) + ",b=http://127.0.0.1:" + std::to_string(pb);
  auto replica = [&](const char* name, int port) {
    return std::make_unique<GatewayProcess>(std::vector<std::string>{
        "--listen", "127.0.0.1:" + std::to_string(port), "--replica-name", name, "--peers", peers});
  };
  auto a = replica("a", pa), b = replica("b", pb);
  std::string handle = b->call_stateless(
      "execute", bash("echo before > /work/kept"))["structuredContent"]["sandbox_id"];
  REQUIRE(handle.rfind("b.sbx_", 0) == 0);
  // Started through A, which forwards to B; the client leaves A; B's program stops.
  expect_cancelled_by_close(*a, *a, handle);

  CHECK(b->stop(SIGKILL) == 128 + SIGKILL);
  auto lost = a->call_stateless("execute", bash("true", handle));
  CHECK(lost["isError"] == true);
  CHECK(text_of(lost).find("lives on replica b") != std::string::npos);
  CHECK(text_of(lost).find("Omit sandbox_id") != std::string::npos);
}
