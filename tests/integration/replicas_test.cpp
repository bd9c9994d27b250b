// Several replicas on loopback: a session created on one replica is usable through any other
// (requests are forwarded to its owner), and a dead owner gives 404 (these replicas keep no
// sessions across a restart: no --state-dir; with one, restart_test.cpp expects 503).
#include <future>

#include "auth/token_store.hpp"
#include "gateway_process.hpp"
#include "task_requests.hpp"
#include "temp_file.hpp"

using namespace sandgate::test;
using nlohmann::json;

TEST_CASE("a session created on replica B works through replicas A and C",
          "[integration][replicas]") {
  int pa = free_port(), pb = free_port(), pc = free_port();
  std::string peers = "a=http://127.0.0.1:" + std::to_string(pa) +
                      ",b=http://127.0.0.1:" + std::to_string(pb) +
                      ",c=http://127.0.0.1:" + std::to_string(pc);
  auto replica = [&](const char* name, int port) {
    return std::make_unique<GatewayProcess>(
        std::vector<std::string>{"--listen", "127.0.0.1:" + std::to_string(port), "--replica-name",
                                 name, "--peers", peers, "--progress-interval", "1"});
  };
  auto a = replica("a", pa), b = replica("b", pb), c = replica("c", pc);

  std::string id = b->initialize();
  REQUIRE(id.rfind("b.", 0) == 0);
  // Through A: runs in B's sandbox for this session.
  auto written = a->execute(id, "echo via-a > /work/where; hostname", "bash");
  CHECK(written["isError"] == false);
  // Through C: sees the same /work.
  CHECK(c->execute(id, "cat /work/where", "bash")["structuredContent"]["stdout"] == "via-a\n");
  // A streamed (SSE) response is relayed piece by piece.
  auto streamed = a->post(
      with_progress_token(
          tool_call_message(9, "execute", execute_arguments("sleep 3; echo streamed", "bash")),
          "t"),
      id);
  CHECK(streamed.status == 200);
  CHECK(streamed.headers["content-type"] == "text/event-stream");
  CHECK(streamed.body.find("notifications/progress") != std::string::npos);
  CHECK(streamed.body.find("streamed\\n") != std::string::npos);
  // A wrong token is refused at the first replica (the owner's own tenant check is the next
  // test's).
  CHECK(a->post({{"jsonrpc", "2.0"}, {"id", 1}, {"method", "ping"}}, id, "wrong").status == 401);
  // DELETE through C ends it on B.
  CHECK(c->request(http::verb::delete_, "/mcp", "", GatewayProcess::mcp_headers(id)).status == 200);
  CHECK(b->post({{"jsonrpc", "2.0"}, {"id", 2}, {"method", "ping"}}, id).status == 404);

  // A sandbox handle made statelessly on B names B, and A and C forward calls naming it.
  json made = b->call_stateless("execute", {{"code", "echo on-b > /work/h"}, {"language", "bash"}});
  std::string handle = made["structuredContent"]["sandbox_id"];
  REQUIRE(handle.rfind("b.sbx_", 0) == 0);
  json via_a = a->call_stateless(
      "execute", {{"code", "cat /work/h"}, {"language", "bash"}, {"sandbox_id", handle}});
  CHECK(via_a["structuredContent"]["stdout"] == "on-b\n");
  CHECK(c->call_stateless("end_sandbox", {{"sandbox_id", handle}})["isError"] == false);
  json ended = a->call_stateless("execute",
                                 {{"code", "true"}, {"language", "bash"}, {"sandbox_id", handle}});
  CHECK(ended["isError"] == true);

  // A dead owner: its sessions are gone (404), the client re-initializes elsewhere.
  std::string orphan = b->initialize();
  CHECK(b->stop(SIGKILL) == 128 + SIGKILL);
  CHECK(a->post({{"jsonrpc", "2.0"}, {"id", 3}, {"method", "ping"}}, orphan).status == 404);
  std::string fresh = a->initialize();
  CHECK(fresh.rfind("a.", 0) == 0);
  CHECK(c->execute(fresh, "echo ok", "bash")["structuredContent"]["stdout"] == "ok\n");
}

TEST_CASE("a replica's forwards hold no place in the owner's per-address connection share",
          "[integration][replicas][per-address]") {
  TempFile secret("peer-secret");
  secret.write("0123456789abcdef0123456789abcdef0123456789abcdef\n");
  int pa = free_port(), pb = free_port();
  std::string peers =
      "a=http://127.0.0.1:" + std::to_string(pa) + ",b=http://127.0.0.1:" + std::to_string(pb);
  auto replica = [&](const char* name, int port, const char* per_address) {
    return std::make_unique<GatewayProcess>(std::vector<std::string>{
        "--listen", "127.0.0.1:" + std::to_string(port), "--replica-name", name, "--peers", peers,
        "--peer-secret-file", secret.path.string(), "--max-connections-per-address", per_address});
  };
  // The test's client reaches A (three calls at once) from the address A reaches B from.
  auto a = replica("a", pa, "8"), b = replica("b", pb, "2");
  std::string first = b->initialize(), second = b->initialize(), third = b->initialize();
  // One client's two long calls through A hold two connections from A to B ...
  auto long_call = [&](const std::string& session, const std::string& code) {
    return std::async(std::launch::async, [&, session, code] {
      return a->execute(session, code, "bash")["structuredContent"]["stdout"];
    });
  };
  auto one = long_call(first, "sleep 4.25; echo first");
  auto two = long_call(second, "sleep 4.5; echo second");
  REQUIRE(eventually(
      [] { return sandboxed_running("sleep 4.25") >= 1 && sandboxed_running("sleep 4.5") >= 1; }));
  // ... and another client's call through A, meanwhile, still reaches B (B's share of
  // 127.0.0.1 is two connections: A's forwards would take it).
  auto other = a->execute(third, "echo third", "bash");
  CHECK(other["structuredContent"]["stdout"] == "third\n");
  CHECK(one.get() == "first\n");
  CHECK(two.get() == "second\n");
}

TEST_CASE(
    "a forwarded request meets the owner's tenant check: another tenant's session, handle "
    "and task stay out of reach through any replica",
    "[integration][replicas][tenants]") {
  TempFile tokens("replica-tenants");
  auto digest = [](const std::string& token) {
    return sandgate::auth::to_hex(sandgate::auth::sha256(token));
  };
  tokens.write(digest("token-alpha") + " alpha\n" + digest("token-beta") + " beta\n");
  int pa = free_port(), pb = free_port();
  std::string peers =
      "a=http://127.0.0.1:" + std::to_string(pa) + ",b=http://127.0.0.1:" + std::to_string(pb);
  auto replica = [&](const char* name, int port) {
    return std::make_unique<GatewayProcess>(
        std::vector<std::string>{"--listen", "127.0.0.1:" + std::to_string(port), "--replica-name",
                                 name, "--peers", peers, "--token-file", tokens.path.string()},
        std::vector<std::string>{});
  };
  auto a = replica("a", pa), b = replica("b", pb);
  // alpha's session on B, with a task running in it.
  std::string session = b->initialize("token-alpha");
  REQUIRE(session.rfind("b.", 0) == 0);
  json task_call = as_task(tool_call_message(2, "execute", execute_arguments("sleep 30", "bash")));
  auto created = a->post(task_call, session, "token-alpha");
  REQUIRE(created.status == 200);
  std::string task_id = created.json_body()["result"]["task"]["taskId"];
  json get_task = {
      {"jsonrpc", "2.0"}, {"id", 3}, {"method", "tasks/get"}, {"params", {{"taskId", task_id}}}};
  // Forwarded from A, alpha reaches its task; beta, with a token every replica accepts, does
  // not reach alpha's session at all: the owner answers as for a session that does not exist.
  CHECK(a->post(get_task, session, "token-alpha").json_body()["result"]["taskId"] == task_id);
  CHECK(a->post(get_task, session, "token-beta").status == 404);
  CHECK(
      a->post({{"jsonrpc", "2.0"}, {"id", 4}, {"method", "ping"}}, session, "token-beta").status ==
      404);
  CHECK(
      b->post({{"jsonrpc", "2.0"}, {"id", 5}, {"method", "ping"}}, session, "token-beta").status ==
      404);

  // alpha's sandbox handle made on B: beta's call naming it through A is refused by B.
  json made = b->call_stateless(
      "execute", {{"code", "echo secret > /work/s"}, {"language", "bash"}}, "token-alpha");
  std::string handle = made["structuredContent"]["sandbox_id"];
  REQUIRE(handle.rfind("b.sbx_", 0) == 0);
  json stolen = a->call_stateless(
      "execute", {{"code", "cat /work/s"}, {"language", "bash"}, {"sandbox_id", handle}},
      "token-beta");
  CHECK(stolen["isError"] == true);
  CHECK(stolen.dump().find("secret") == std::string::npos);
  json own = a->call_stateless(
      "execute", {{"code", "cat /work/s"}, {"language", "bash"}, {"sandbox_id", handle}},
      "token-alpha");
  CHECK(own["structuredContent"]["stdout"] == "secret\n");
}

// Issue #41: a 2026-07-28 task is named by its taskId alone (no session), which names the
// replica that made it; tasks/get and tasks/cancel through another replica reach it there.
TEST_CASE("a 2026-07-28 task made on replica B is polled and cancelled through replica A",
          "[integration][replicas][tasks]") {
  TempFile tokens("replica-tasks");
  auto digest = [](const std::string& token) {
    return sandgate::auth::to_hex(sandgate::auth::sha256(token));
  };
  tokens.write(digest("token-alpha") + " alpha\n" + digest("token-beta") + " beta\n");
  // The peers' shared secret: it rides on every forward, and never reaches either log.
  const std::string peer_secret = "5ec7e75ec7e75ec7e75ec7e75ec7e75ec7e75ec7e75ec7e7";
  TempFile secret("replica-tasks-secret");
  secret.write(peer_secret + "\n");
  TempFile log_a("replica-a.log"), log_b("replica-b.log");
  int pa = free_port(), pb = free_port();
  std::string peers =
      "a=http://127.0.0.1:" + std::to_string(pa) + ",b=http://127.0.0.1:" + std::to_string(pb);
  auto replica = [&](const char* name, int port, const TempFile& log) {
    return std::make_unique<GatewayProcess>(
        std::vector<std::string>{"--listen", "127.0.0.1:" + std::to_string(port), "--replica-name",
                                 name, "--peers", peers, "--token-file", tokens.path.string(),
                                 "--task-after", "0", "--peer-secret-file", secret.path.string(),
                                 "--log-level", "debug"},
        std::vector<std::string>{}, false,
        std::vector<std::string>{EXEC_WITH_BINARY, "--stderr", log.path.string(), "--"});
  };
  auto a = replica("a", pa, log_a), b = replica("b", pb, log_b);
  const std::string marker = "sleep 643";  // a command line no other test runs
  auto made = response_of(post_2026(*b, "tools/call", bash_call(marker, 120), true, "token-alpha"));
  REQUIRE(made["result"]["resultType"] == "task");
  std::string id = made["result"]["taskId"];
  REQUIRE(id.rfind("b.", 0) == 0);
  REQUIRE(eventually([&] { return sandboxed_running(marker) == 1; }));

  auto got = response_of(post_2026(*a, "tasks/get", {{"taskId", id}}, true, "token-alpha"));
  INFO(got.dump());
  CHECK(got["result"]["taskId"] == id);
  CHECK(got["result"]["status"] == "working");
  // Forwarded or not, another tenant's token does not reach it.
  for (const char* method : {"tasks/get", "tasks/cancel"}) {
    INFO(method);
    CHECK(response_of(post_2026(*a, method, {{"taskId", id}}, true,
                                "token-beta"))["error"]["code"] == -32602);
  }
  CHECK(sandboxed_running(marker) == 1);
  CHECK(response_of(post_2026(*a, "tasks/cancel", {{"taskId", id}}, true, "token-alpha"))
            .contains("result"));
  CHECK(eventually([&] { return sandboxed_running(marker) == 0; }));
  CHECK(response_of(post_2026(*a, "tasks/get", {{"taskId", id}}, true,
                              "token-alpha"))["result"]["status"] == "cancelled");
  REQUIRE(a->stop(SIGTERM) == 0);
  REQUIRE(b->stop(SIGTERM) == 0);
  for (const TempFile* log : {&log_a, &log_b}) {
    std::string logged = log->read();
    INFO(logged);
    REQUIRE(logged.find("\"ready\"") != std::string::npos);  // a log, not an empty file
    CHECK(logged.find(peer_secret) == std::string::npos);
  }
}
