// Integration tests: the real binary, real sockets, real sandboxes.
#include <sys/socket.h>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>
#include <filesystem>
#include <fstream>
#include <future>

#include "auth/token_store.hpp"
#include "gateway_process.hpp"

using namespace sandgate::test;
using nlohmann::json;

namespace {
json structured(const json& result) {
  return result["structuredContent"];
}
}  // namespace

TEST_CASE("a session runs code in its own sandbox over HTTP", "[integration]") {
  GatewayProcess gw({});
  std::string a = gw.initialize();
  auto first = gw.execute(a, "open('/work/note.txt', 'w').write('hello from a')\nprint('written')");
  CHECK(first["isError"] == false);
  CHECK(structured(first)["stdout"] == "written\n");
  auto again = gw.execute(a, "cat /work/note.txt", "bash");
  CHECK(structured(again)["stdout"] == "hello from a");
  auto js = gw.execute(a, "console.log(process.version.startsWith('v'))", "javascript");
  CHECK(structured(js)["stdout"] == "true\n");

  // Another session does not see the first one's files.
  std::string b = gw.initialize();
  auto other = gw.execute(b, "ls /work | wc -l; cat /work/note.txt", "bash");
  CHECK(structured(other)["stdout"] == "0\n");
  CHECK(structured(other)["exit_code"] == 1);
  CHECK(other["isError"] == false);  // a non-zero exit is a normal result

  // DELETE ends the session and its sandbox; the id is then unknown.
  CHECK(gw.request(http::verb::delete_, "/mcp", "", GatewayProcess::mcp_headers(a)).status == 200);
  CHECK(gw.post({{"jsonrpc", "2.0"}, {"id", 5}, {"method", "ping"}}, a).status == 404);
  // The pid names the gateway's cgroups; stop() forgets it.
  pid_t pid = gw.pid();
  CHECK(gw.stop() == 0);
  CHECK(cgroups_of(pid) == 0);
}

TEST_CASE("a wrong token is refused with 401 and counted", "[integration]") {
  GatewayProcess gw({});
  auto r = gw.post({{"jsonrpc", "2.0"}, {"id", 1}, {"method", "ping"}}, {}, "wrong");
  CHECK(r.status == 401);
  CHECK(r.headers["www-authenticate"].rfind("Bearer", 0) == 0);
  auto metrics = gw.request(http::verb::get, "/metrics").body;
  CHECK(metrics.find("sandgate_auth_failures_total 1") != std::string::npos);
  CHECK(gw.request(http::verb::get, "/healthz").status == 200);
}

TEST_CASE("a session created with one tenant's token is invisible to another's", "[integration]") {
  std::filesystem::path tokens =
      std::filesystem::temp_directory_path() / ("sandgate-tokens-" + std::to_string(::getpid()));
  {
    std::ofstream f(tokens);
    f << "# tenants of this test\n"
      << sandgate::auth::to_hex(sandgate::auth::sha256("token-a")) << " alpha max_sessions=1\n"
      << sandgate::auth::to_hex(sandgate::auth::sha256("token-b")) << " beta\n";
  }
  GatewayProcess gw({"--token-file", tokens.string(), "--at-session-cap", "refuse"}, {});
  std::filesystem::remove(tokens);
  std::string mine = gw.initialize("token-a");
  json ping = {{"jsonrpc", "2.0"}, {"id", 1}, {"method", "ping"}};
  CHECK(gw.post(ping, mine, "token-b").status == 404);
  CHECK(gw.request(http::verb::delete_, "/mcp", "", GatewayProcess::mcp_headers(mine, "token-b"))
            .status == 404);
  CHECK(gw.post(ping, mine, "token-a").status == 200);
  // alpha's override: one session at most.
  json init = {{"jsonrpc", "2.0"},
               {"id", 0},
               {"method", "initialize"},
               {"params", {{"protocolVersion", "2025-11-25"}}}};
  CHECK(gw.post(init, {}, "token-a").status == 429);
  CHECK(gw.post(init, {}, "token-b").status == 200);
}

TEST_CASE("a body over the limit gets 413 and the server keeps serving", "[integration]") {
  GatewayProcess gw({"--body-limit-bytes", "4096"});
  std::string id = gw.initialize();
  json big = tool_call_message(1, "execute", {{"code", std::string(8000, '#')}});
  CHECK(gw.request(http::verb::post, "/mcp", big.dump(), GatewayProcess::mcp_headers(id)).status ==
        413);
  CHECK(gw.post({{"jsonrpc", "2.0"}, {"id", 2}, {"method", "ping"}}, id).status == 200);
}

TEST_CASE("a client dribbling its headers is cut off, others are served meanwhile",
          "[integration]") {
  GatewayProcess gw({"--header-timeout", "2"});
  boost::asio::io_context io;
  boost::asio::ip::tcp::socket slow(io);
  slow.connect(
      {boost::asio::ip::make_address("127.0.0.1"), static_cast<unsigned short>(gw.port())});
  boost::asio::write(slow, boost::asio::buffer(std::string("POST /mcp HTTP/1.1\r\nHo")));
  // Another client is served while the slow one hangs.
  CHECK(gw.request(http::verb::get, "/healthz").status == 200);
  // The slow client's connection is closed by the server after the header timeout.
  char byte;
  boost::system::error_code ec;
  slow.read_some(boost::asio::buffer(&byte, 1), ec);
  CHECK(ec == boost::asio::error::eof);
}

TEST_CASE("notifications/cancelled kills the running program", "[integration]") {
  GatewayProcess gw({});
  std::string id = gw.initialize();
  auto call = std::async(std::launch::async, [&] {
    return gw.post(
        tool_call_message(
            42, "execute",
            execute_arguments("touch /work/started; sleep 60; touch /work/finished", "bash", 120)),
        id);
  });
  // The program must have started: a cancel that came first would drop the call unstarted.
  REQUIRE(eventually([] { return sandboxed_running("sleep 60") == 1; }));
  CHECK(gw.post({{"jsonrpc", "2.0"},
                 {"method", "notifications/cancelled"},
                 {"params", {{"requestId", 42}, {"reason", "test"}}}},
                id)
            .status == 202);
  REQUIRE(call.wait_for(std::chrono::seconds(20)) == std::future_status::ready);
  auto reply = call.get();
  CHECK(reply.status == 202);  // no JSON-RPC response for a cancelled request
  CHECK(reply.body.empty());
  auto check = gw.execute(id, "ls /work", "bash");
  CHECK(structured(check)["stdout"] == "started\n");
}

TEST_CASE("a session's calls run one at a time in arrival order", "[integration]") {
  GatewayProcess gw({});
  std::string id = gw.initialize();
  auto first = std::async(std::launch::async, [&] {
    return gw.call_execute(id, "sleep 1; echo A >> /work/log", "bash", 30, 1);
  });
  REQUIRE(eventually([] { return sandboxed_running("sleep 1") == 1; }));
  auto second = std::async(std::launch::async, [&] {
    return gw.call_execute(id, "echo B >> /work/log", "bash", 30, 2);
  });
  CHECK(first.get().status == 200);
  CHECK(second.get().status == 200);
  CHECK(structured(gw.execute(id, "cat /work/log", "bash"))["stdout"] == "A\nB\n");
}

TEST_CASE("beyond the gateway's queue a call gets a 'busy' tool error", "[integration]") {
  GatewayProcess gw({"--max-concurrent-calls", "1", "--max-queued-calls", "0"});
  std::string a = gw.initialize(), b = gw.initialize();
  auto running =
      std::async(std::launch::async, [&] { return gw.call_execute(a, "sleep 3", "bash"); });
  REQUIRE(eventually([] { return sandboxed_running("sleep 3") == 1; }));
  auto refused = gw.execute(b, "echo hi", "bash");
  CHECK(refused["isError"] == true);
  CHECK(refused["content"][0]["text"].get<std::string>().find("busy") != std::string::npos);
  CHECK(running.get().json_body()["result"]["isError"] == false);
}

TEST_CASE("idle sessions expire with their sandbox", "[integration]") {
  // 3 s: the sandbox is still there to be seen when the call returns on a loaded machine.
  GatewayProcess gw({"--session-idle-timeout", "3"});
  std::string id = gw.initialize();
  gw.execute(id, "echo x", "bash");
  CHECK(sandbox_cgroups_of(gw.pid()) > 0);
  // Nothing touches the session now; the sweep ends it a few seconds later.
  CHECK(eventually([&] { return sandbox_cgroups_of(gw.pid()) == 0; }));
  CHECK(gw.post({{"jsonrpc", "2.0"}, {"id", 1}, {"method", "ping"}}, id).status == 404);
}

TEST_CASE("SIGTERM mid-call: the call gets an answer, sandboxes end, exit 0", "[integration]") {
  GatewayProcess gw({"--shutdown-grace", "5"});
  std::string id = gw.initialize();
  auto call = std::async(std::launch::async, [&] {
    return gw.post(tool_call_message(7, "execute", execute_arguments("sleep 60", "bash")), id);
  });
  REQUIRE(eventually([] { return sandboxed_running("sleep 60") == 1; }));
  pid_t pid = gw.pid();
  CHECK(gw.stop(SIGTERM) == 0);
  auto reply = call.get();
  CHECK(reply.status == 200);
  CHECK(reply.json_body()["result"]["isError"] == true);
  CHECK(cgroups_of(pid) == 0);
}

// The same cgroup for a gateway and its successor, as a restarted service has (VM stage).
const std::vector<std::string> kRestartEnv = {"SANDGATE_TOKEN=test-token",
                                              "SANDGATE_TEST_CGROUP=restart"};

TEST_CASE("after a SIGKILL of the gateway, the next start sweeps what it left", "[integration]") {
  pid_t dead;
  {
    GatewayProcess gw({}, kRestartEnv);
    std::string id = gw.initialize();
    gw.execute(id, "sleep 300 > /dev/null 2>&1 & echo started", "bash");
    dead = gw.pid();
    CHECK(cgroups_of(dead) > 0);
    CHECK(gw.stop(SIGKILL) == 128 + SIGKILL);
  }
  // The sandbox's processes died with the gateway (parent-death signal on the supervisor).
  CHECK(eventually([] { return sandboxed_running("sleep 300") == 0; }));
  GatewayProcess next({}, kRestartEnv);
  CHECK(cgroups_of(dead) == 0);
}
