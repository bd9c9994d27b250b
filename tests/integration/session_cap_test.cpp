// Caps that never lock a tenant out, on the real binary: at a session cap the least recently
// used idle session (or handle) of the right tenant is ended for the new one; at the sandbox cap
// the least recently used idle sandbox is; a session or sandbox with a call running never is.
#include <filesystem>
#include <fstream>
#include <future>
#include <sstream>

#include "auth/token_store.hpp"
#include "gateway_process.hpp"

using namespace sandgate::test;
using nlohmann::json;

namespace {

std::string digest(const std::string& token) {
  return sandgate::auth::to_hex(sandgate::auth::sha256(token));
}

struct TokensFile {
  std::filesystem::path path = std::filesystem::temp_directory_path() /
                               ("sandgate-session-cap-" + std::to_string(::getpid()));
  TokensFile() {
    std::ofstream f(path);
    f << digest("token-alpha") << " alpha\n" << digest("token-beta") << " beta\n";
    f.close();
    std::filesystem::permissions(
        path, std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  }
  ~TokensFile() { std::filesystem::remove(path); }
};

json ping() {
  return {{"jsonrpc", "2.0"}, {"id", 1}, {"method", "ping"}};
}

json initialize_message() {
  return {{"jsonrpc", "2.0"},
          {"id", 0},
          {"method", "initialize"},
          {"params", {{"protocolVersion", "2025-11-25"}}}};
}

json execute_message(const std::string& code, int timeout_s, int id) {
  return tool_call_message(id, "execute", execute_arguments(code, "bash", timeout_s));
}

bool alive(GatewayProcess& gw, const std::string& session, const std::string& token) {
  return gw.post(ping(), session, token).status == 200;
}

}  // namespace

TEST_CASE("at its session cap a tenant's least recently used idle session makes room",
          "[integration][session_cap]") {
  TokensFile tokens;
  GatewayProcess gw({"--token-file", tokens.path.string(), "--max-sessions-per-tenant", "3",
                     "--max-sessions", "5"},
                    {});
  std::string a1 = gw.initialize("token-alpha"), a2 = gw.initialize("token-alpha"),
              a3 = gw.initialize("token-alpha"), b1 = gw.initialize("token-beta");
  REQUIRE(alive(gw, a1, "token-alpha"));  // a1 used last: a2 is the least recently used

  // alpha's cap: its own least recently used session goes, beta's stays.
  std::string a4 = gw.initialize("token-alpha");
  auto gone = gw.post(ping(), a2, "token-alpha");
  CHECK(gone.status == 404);
  CHECK(gone.body.find("to make room for a newer one of its tenant") != std::string::npos);
  // In this order: a3 is left alpha's least recently used.
  CHECK(alive(gw, a3, "token-alpha"));
  CHECK(alive(gw, a1, "token-alpha"));
  CHECK(alive(gw, a4, "token-alpha"));
  CHECK(alive(gw, b1, "token-beta"));
  CHECK(metric(gw, "sandgate_sessions_evicted_total{reason=\"tenant_cap\"}") == 1);

  // The gateway's cap (5): beta is under its own cap, so the tenant holding the most (alpha)
  // gives up its least recently used session, and beta's stay.
  std::string b2 = gw.initialize("token-beta");
  CHECK(metric(gw, "sandgate_sessions_evicted_total{reason=\"gateway_cap\"}") == 0);
  std::string b3 = gw.initialize("token-beta");
  CHECK(metric(gw, "sandgate_sessions_evicted_total{reason=\"gateway_cap\"}") == 1);
  CHECK(gw.post(ping(), a3, "token-alpha").status == 404);
  CHECK(alive(gw, b1, "token-beta"));
  CHECK(alive(gw, b2, "token-beta"));
  CHECK(alive(gw, a1, "token-alpha"));
  CHECK(alive(gw, a4, "token-alpha"));
  CHECK(metric(gw, "sandgate_sessions_refused_total") == 0);
}

TEST_CASE("a sandbox handle ended for room tells its next call why", "[integration][session_cap]") {
  GatewayProcess gw({"--max-sessions-per-tenant", "2"});
  auto make_handle = [&] {
    auto made = gw.call_stateless("execute", {{"code", "echo made"}, {"language", "bash"}});
    REQUIRE(made["isError"] == false);
    return made["structuredContent"]["sandbox_id"].get<std::string>();
  };
  std::string h1 = make_handle(), h2 = make_handle(), h3 = make_handle();
  auto told = gw.call_stateless("execute",
                                {{"code", "echo again"}, {"language", "bash"}, {"sandbox_id", h1}});
  CHECK(told["isError"] == true);
  CHECK(told.dump().find("to make room for a newer one of its tenant") != std::string::npos);
  auto kept = gw.call_stateless("execute",
                                {{"code", "echo kept"}, {"language", "bash"}, {"sandbox_id", h3}});
  CHECK(kept["isError"] == false);
  CHECK(kept["structuredContent"]["stdout"] == "kept\n");
}

TEST_CASE("a session with a call running is never ended for room, and all busy is refused",
          "[integration][session_cap]") {
  GatewayProcess gw({"--max-sessions-per-tenant", "2", "--timeout-max", "900"});
  std::string s1 = gw.initialize(), s2 = gw.initialize();
  const std::string long_call = "sleep 619";  // a name no other test's program has
  std::future<HttpReply> first, second;
  StopGatewayFirst stop_first{gw};
  first = std::async(std::launch::async,
                     [&] { return gw.post(execute_message(long_call, 900, 1), s1); });
  REQUIRE(eventually([&] { return sandboxed_running(long_call) == 1; }));
  // s1 runs a call and s2 is idle, though older in use: s2 goes.
  REQUIRE(alive(gw, s2, "test-token"));
  std::string s3 = gw.initialize();
  CHECK(gw.post(ping(), s2, "test-token").status == 404);
  CHECK(alive(gw, s1, "test-token"));
  second = std::async(std::launch::async,
                      [&] { return gw.post(execute_message(long_call, 900, 2), s3); });
  REQUIRE(eventually([&] { return sandboxed_running(long_call) == 2; }));
  // Both run a call: refused as before, nothing ended.
  auto refused = gw.post(initialize_message());
  CHECK(refused.status == 429);
  CHECK(refused.body.find("Too many sessions") != std::string::npos);
  CHECK(refused.body.find("every one has a call running") != std::string::npos);
  CHECK(sandboxed_running(long_call) == 2);
  CHECK(metric(gw, "sandgate_sessions_evicted_total{reason=\"tenant_cap\"}") == 1);
}

TEST_CASE("with --at-session-cap=refuse a full cap refuses as before",
          "[integration][session_cap]") {
  GatewayProcess gw({"--max-sessions-per-tenant", "1", "--at-session-cap", "refuse"});
  std::string s1 = gw.initialize();
  auto refused = gw.post(initialize_message());
  CHECK(refused.status == 429);
  CHECK(refused.body.find("Too many sessions") != std::string::npos);
  CHECK(alive(gw, s1, "test-token"));
  CHECK(metric(gw, "sandgate_sessions_evicted_total{reason=\"tenant_cap\"}") == 0);
}

TEST_CASE(
    "with hibernation off, at the sandbox cap the least recently used idle sandbox is ended, a "
    "busy one never",
    "[integration][session_cap]") {
  // Hibernated instead when hibernation is on (tests/integration/pressure_test.cpp).
  GatewayProcess gw(
      {"--max-sandboxes", "2", "--timeout-max", "900", "--sandbox-hibernate-after", "0"});
  std::string busy = gw.initialize(), idle = gw.initialize(), fresh = gw.initialize();
  const std::string long_call = "sleep 621";
  std::future<HttpReply> running;
  StopGatewayFirst stop_first{gw};
  running = std::async(std::launch::async,
                       [&] { return gw.post(execute_message(long_call, 900, 1), busy); });
  REQUIRE(eventually([&] { return sandboxed_running(long_call) == 1; }));
  auto planted = gw.post(execute_message("echo kept > /work/f && echo planted", 30, 2), idle);
  REQUIRE(planted.status == 200);
  REQUIRE(planted.json_body()["result"]["isError"] == false);

  // Both sandboxes live; a third session's first call ends the idle one, not the busy one.
  auto ran = gw.post(execute_message("echo fresh ran", 30, 3), fresh);
  REQUIRE(ran.status == 200);
  CHECK(ran.json_body()["result"]["structuredContent"]["stdout"] == "fresh ran\n");
  CHECK(sandboxed_running(long_call) == 1);
  CHECK(metric(gw, "sandgate_sandboxes_evicted_total{reason=\"sandbox_cap\"}") == 1);

  // The idle session stays; its next call starts a fresh sandbox (its files went with the old).
  auto again = gw.post(execute_message("cat /work/f || echo no file", 30, 4), idle);
  REQUIRE(again.status == 200);
  CHECK(again.json_body()["result"]["structuredContent"]["stdout"] == "no file\n");
  CHECK(sandboxed_running(long_call) == 1);
  CHECK(metric(gw, "sandgate_sandboxes_evicted_total{reason=\"sandbox_cap\"}") == 2);
  CHECK(running.wait_for(std::chrono::seconds(0)) == std::future_status::timeout);
}
