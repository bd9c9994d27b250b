// Tasks on the real binary (MCP 2025-11-25's experimental tasks): a call run as a task is
// answered at once and runs on after its client went away; its result is polled and fetched;
// tasks/cancel kills its program; only the tenant that made a task can see it.
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <future>
#include <sstream>

#include "auth/token_store.hpp"
#include "gateway_process.hpp"
#include "task_requests.hpp"

using namespace sandgate::test;
using nlohmann::json;

namespace {

// Notifications of a reply (an event stream's; none for a plain JSON body).
std::vector<json> notifications_of(const HttpReply& reply) {
  std::vector<json> out;
  std::istringstream lines(reply.body);
  for (std::string line; std::getline(lines, line);)
    if (line.rfind("data: {", 0) == 0) {
      json message = json::parse(line.substr(6));
      if (message.contains("method")) out.push_back(message);
    }
  return out;
}

json request(const std::string& method, json params, int id) {
  return {{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", std::move(params)}};
}

json execute_as_task(const std::string& code, int timeout_s, int id, json task = json::object()) {
  return as_task(tool_call_message(id, "execute", execute_arguments(code, "bash", timeout_s)),
                 std::move(task));
}

std::string digest(const std::string& token) {
  return sandgate::auth::to_hex(sandgate::auth::sha256(token));
}

struct TokensFile {
  std::filesystem::path path =
      std::filesystem::temp_directory_path() / ("sandgate-tasks-" + std::to_string(::getpid()));
  explicit TokensFile(const std::string& text) {
    std::ofstream(path) << text;
    ::chmod(path.c_str(), 0600);
  }
  ~TokensFile() { std::filesystem::remove(path); }
};

}  // namespace

TEST_CASE("a call run as a task is answered at once and its result is fetched later",
          "[integration][tasks]") {
  GatewayProcess gw({"--timeout-default", "5", "--timeout-max", "5", "--task-timeout-max", "60"});
  std::string session = gw.initialize();

  // initialize announces tasks; tools/list says execute may run as one.
  auto init = gw.post({{"jsonrpc", "2.0"},
                       {"id", 0},
                       {"method", "initialize"},
                       {"params", {{"protocolVersion", "2025-11-25"}}}});
  CHECK(init.json_body()["result"]["capabilities"]["tasks"]["requests"]["tools"].contains("call"));
  auto tools = response_of(gw.post(request("tools/list", json::object(), 1), session));
  CHECK(tools["result"]["tools"][0]["execution"]["taskSupport"] == "optional");

  // Longer than a plain call may ask for (5 s here): allowed as a task. The client's connection
  // is closed at once, and the task runs on.
  gw.post_and_close(
      execute_as_task("sleep 2; echo done-late > /work/late; echo out", 30, 2, {{"ttl", 120000}}),
      GatewayProcess::mcp_headers(session), std::chrono::milliseconds(0));
  auto created = response_of(gw.post(execute_as_task("sleep 1; echo from-task", 30, 3), session));
  REQUIRE(created.contains("result"));
  json task = created["result"]["task"];
  CHECK(task["status"] == "working");
  CHECK(task["ttl"].get<long>() > 0);
  CHECK(task["pollInterval"].get<long>() > 0);
  CHECK(task["createdAt"].get<std::string>().back() == 'Z');
  std::string id = task["taskId"];

  auto got = response_of(gw.post(request("tasks/get", {{"taskId", id}}, 4), session));
  CHECK(got["result"]["taskId"] == id);

  // tasks/result waits for the end and answers what the call would have, tied to its task.
  auto reply = gw.post(request("tasks/result", {{"taskId", id}}, 5), session);
  auto result = response_of(reply)["result"];
  CHECK(result["structuredContent"]["stdout"] == "from-task\n");
  CHECK(result["_meta"]["io.modelcontextprotocol/related-task"]["taskId"] == id);
  // Its stream told the task's new status first.
  auto told = notifications_of(reply);
  REQUIRE(told.size() == 1);
  CHECK(told[0]["method"] == "notifications/tasks/status");
  CHECK(told[0]["params"]["status"] == "completed");
  CHECK(response_of(gw.post(request("tasks/get", {{"taskId", id}}, 6),
                            session))["result"]["status"] == "completed");

  // The task whose client went away ran to its end, in the session's sandbox.
  auto list = response_of(gw.post(request("tasks/list", json::object(), 7), session));
  REQUIRE(list["result"]["tasks"].size() == 2);
  // The closed connection's request may reach the gateway after the second one: whichever
  // task is not the one fetched above is the abandoned one.
  std::string first = list["result"]["tasks"][0]["taskId"];
  if (first == id) first = list["result"]["tasks"][1]["taskId"];
  CHECK(first != id);
  auto late = response_of(gw.post(request("tasks/result", {{"taskId", first}}, 8), session));
  CHECK(late["result"]["structuredContent"]["stdout"] == "out\n");
  CHECK(gw.execute(session, "cat /work/late", "bash", 5)["structuredContent"]["stdout"] ==
        "done-late\n");

  // A plain call still has the plain maximum, and is told how to get more.
  auto plain = gw.execute(session, "true", "bash", 30);
  CHECK(plain["isError"] == true);
  CHECK(plain["content"][0]["text"].get<std::string>().find("as a task") != std::string::npos);

  // Ended tasks cannot be cancelled; unknown ids are invalid params.
  auto again = response_of(gw.post(request("tasks/cancel", {{"taskId", id}}, 9), session));
  CHECK(again["error"]["code"] == -32602);
  auto unknown = response_of(gw.post(request("tasks/get", {{"taskId", "nope"}}, 10), session));
  CHECK(unknown["error"]["code"] == -32602);
}

TEST_CASE("tasks/cancel kills the task's program, and the task stays cancelled",
          "[integration][tasks]") {
  GatewayProcess gw({});
  std::string session = gw.initialize();
  const std::string marker = "sleep 623";  // a command line no other test runs
  auto created = response_of(gw.post(execute_as_task(marker, 60, 1), session));
  std::string id = created["result"]["task"]["taskId"];
  auto running = [&] {
    return std::system(("pgrep -f '^" + marker + "$' > /dev/null").c_str()) == 0;
  };
  REQUIRE(eventually(running));
  auto cancelled = response_of(gw.post(request("tasks/cancel", {{"taskId", id}}, 2), session));
  CHECK(cancelled["result"]["status"] == "cancelled");
  CHECK(eventually([&] { return !running(); }));
  auto result = response_of(gw.post(request("tasks/result", {{"taskId", id}}, 3), session));
  CHECK(result["result"]["isError"] == true);
  CHECK(response_of(gw.post(request("tasks/get", {{"taskId", id}}, 4),
                            session))["result"]["status"] == "cancelled");
  // The sandbox lives on.
  CHECK(gw.execute(session, "echo still", "bash")["structuredContent"]["stdout"] == "still\n");
}

TEST_CASE("a tasks/result whose client went does not hold its place until the task ends",
          "[integration][tasks]") {
  GatewayProcess gw({});
  std::string session = gw.initialize();
  auto created = response_of(gw.post(execute_as_task("sleep 60", 90, 1), session));
  std::string id = created["result"]["task"]["taskId"];
  // As many waiters as a task may have, each gone at once.
  for (int i = 0; i < 16; ++i)
    gw.post_and_close(request("tasks/result", {{"taskId", id}}, 100 + i),
                      GatewayProcess::mcp_headers(session), std::chrono::milliseconds(50));
  // The gateway sees the clients go (and closes their connections).
  REQUIRE(eventually([&] { return server_connections(gw.port()) == 0; }));
  // One more waits in their stead (rather than being told too many wait), and gets the end.
  auto waiting = std::async(std::launch::async, [&] {
    return gw.post(request("tasks/result", {{"taskId", id}}, 200), session);
  });
  // It waits (the gateway holds its connection, and has answered a later request meanwhile)
  // rather than being told at once that too many wait. (The cap itself: task_store_test.)
  REQUIRE(eventually([&] { return server_connections(gw.port()) == 1; }));
  CHECK(response_of(gw.post(request("tasks/get", {{"taskId", id}}, 199),
                            session))["result"]["status"] == "working");
  CHECK(waiting.wait_for(std::chrono::seconds(0)) == std::future_status::timeout);
  response_of(gw.post(request("tasks/cancel", {{"taskId", id}}, 201), session));
  auto result = response_of(waiting.get());
  INFO(result.dump());
  CHECK(result["result"]["isError"] == true);
  CHECK(result["result"]["content"][0]["text"].get<std::string>().find("Cancelled") !=
        std::string::npos);
}

TEST_CASE("a task is the business of its tenant only", "[integration][tasks]") {
  TokensFile tokens(digest("token-alpha") + " alpha\n" + digest("token-beta") + " beta\n");
  GatewayProcess gw({"--token-file", tokens.path.string()}, {});
  std::string a = gw.initialize("token-alpha"), b = gw.initialize("token-beta");
  auto created = response_of(gw.post(execute_as_task("sleep 30", 60, 1), a, "token-alpha"));
  std::string id = created["result"]["task"]["taskId"];
  for (const char* method : {"tasks/get", "tasks/result", "tasks/cancel"}) {
    auto other = response_of(gw.post(request(method, {{"taskId", id}}, 2), b, "token-beta"));
    INFO(method);
    CHECK(other["error"]["code"] == -32602);
  }
  auto list = response_of(gw.post(request("tasks/list", json::object(), 3), b, "token-beta"));
  CHECK(list["result"]["tasks"].empty());
  // Its own tenant still sees it running.
  CHECK(response_of(gw.post(request("tasks/get", {{"taskId", id}}, 4), a,
                            "token-alpha"))["result"]["status"] == "working");
  response_of(gw.post(request("tasks/cancel", {{"taskId", id}}, 5), a, "token-alpha"));
}

TEST_CASE("a tenant's tasks are bounded: the oldest ended one makes room, running ones never",
          "[integration][tasks]") {
  GatewayProcess gw({"--tasks-per-tenant", "2"});
  std::string session = gw.initialize();
  auto first = response_of(gw.post(execute_as_task("echo one", 30, 1), session));
  std::string one = first["result"]["task"]["taskId"];
  response_of(gw.post(request("tasks/result", {{"taskId", one}}, 2), session));
  auto second = response_of(gw.post(execute_as_task("sleep 30", 60, 3), session));
  auto third = response_of(gw.post(execute_as_task("sleep 30", 60, 4), session));
  REQUIRE(third.contains("result"));  // the ended first one made room
  CHECK(response_of(gw.post(request("tasks/get", {{"taskId", one}}, 5),
                            session))["error"]["code"] == -32602);
  auto refused = response_of(gw.post(execute_as_task("echo four", 30, 6), session));
  CHECK(refused["error"]["message"].get<std::string>().find("Too many tasks") != std::string::npos);
  for (const auto& t : {second, third})
    response_of(
        gw.post(request("tasks/cancel", {{"taskId", t["result"]["task"]["taskId"]}}, 7), session));
}

TEST_CASE("malformed task requests get clear errors", "[integration][tasks]") {
  GatewayProcess gw({});
  std::string session = gw.initialize();
  auto bad_ttl = response_of(gw.post(execute_as_task("true", 5, 1, {{"ttl", "soon"}}), session));
  CHECK(bad_ttl["error"]["code"] == -32602);
  auto not_object = response_of(
      gw.post(as_task(tool_call_message(2, "execute", {{"code", "true"}}), 5), session));
  CHECK(not_object["error"]["code"] == -32602);
  auto no_task_tool =
      response_of(gw.post(as_task(tool_call_message(3, "end_sandbox", json::object())), session));
  CHECK(no_task_tool["error"]["code"] == -32601);
  auto bad_cursor = response_of(gw.post(request("tasks/list", {{"cursor", "zz"}}, 4), session));
  CHECK(bad_cursor["error"]["code"] == -32602);
}

TEST_CASE("2026-07-28: a call that outlasts --task-after becomes a task the client polls",
          "[integration][tasks]") {
  // --task-after counts from the call's arrival, sandbox start included: 3 s leaves a loaded
  // machine room to answer the quick call in time, and the slow one outlasts it by far.
  GatewayProcess gw({"--task-after", "3", "--timeout-default", "5", "--timeout-max", "10"});
  auto discover = response_of(post_2026(gw, "server/discover", json::object(), false));
  CHECK(discover["result"]["capabilities"]["extensions"].contains("io.modelcontextprotocol/tasks"));

  // A quick call is answered as usual, even from a client that declared tasks.
  auto quick = response_of(post_2026(gw, "tools/call", bash_call("echo quick", 5), true));
  CHECK(quick["result"]["resultType"] == "complete");
  CHECK(quick["result"]["structuredContent"]["stdout"] == "quick\n");

  // A longer one becomes a task: flat, resultType "task", with ttlMs and pollIntervalMs. It may
  // ask for more than a plain call's maximum.
  auto made = response_of(post_2026(gw, "tools/call", bash_call("sleep 6; echo slow", 30), true));
  REQUIRE(made["result"]["resultType"] == "task");
  std::string id = made["result"]["taskId"];
  CHECK(made["result"]["status"] == "working");
  CHECK(made["result"]["ttlMs"].get<long>() > 0);
  CHECK(made["result"]["pollIntervalMs"].get<long>() > 0);
  CHECK_FALSE(made["result"].contains("task"));

  json got;
  for (int i = 0; i < 100; ++i) {
    got = response_of(post_2026(gw, "tasks/get", {{"taskId", id}}, true))["result"];
    if (got["status"] != "working") break;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  CHECK(got["status"] == "completed");
  CHECK(got["resultType"] == "complete");
  CHECK(got["result"]["structuredContent"]["stdout"] == "slow\n");
  CHECK_FALSE(got["result"].contains("_meta"));

  // Without the extension: the same call is a plain call (and a plain call's maximum holds);
  // the task methods name the missing capability.
  auto plain =
      response_of(post_2026(gw, "tools/call", bash_call("sleep 4; echo plain", 10), false));
  CHECK(plain["result"]["structuredContent"]["stdout"] == "plain\n");
  auto gated = response_of(post_2026(gw, "tasks/get", {{"taskId", id}}, false));
  CHECK(gated["error"]["code"] == -32021);
  // tasks/result and tasks/list are not methods of this revision.
  CHECK(response_of(post_2026(gw, "tasks/result", {{"taskId", id}}, true))["error"]["code"] ==
        -32601);
  // Cancelling an ended task is acknowledged; an unknown one is invalid params.
  CHECK(response_of(post_2026(gw, "tasks/cancel", {{"taskId", id}}, true)).contains("result"));
  CHECK(response_of(post_2026(gw, "tasks/cancel", {{"taskId", "task_nope"}},
                              true))["error"]["code"] == -32602);
}

TEST_CASE("2026-07-28: tasks/cancel stops a task's program, and another tenant cannot see it",
          "[integration][tasks]") {
  TokensFile tokens(digest("token-alpha") + " alpha\n" + digest("token-beta") + " beta\n");
  GatewayProcess gw({"--token-file", tokens.path.string(), "--task-after", "0"}, {});
  const std::string marker = "sleep 627";  // a command line no other test runs
  auto made = response_of(post_2026(gw, "tools/call", bash_call(marker, 60), true, "token-alpha"));
  std::string id = made["result"]["taskId"];
  auto running = [&] {
    return std::system(("pgrep -f '^" + marker + "$' > /dev/null").c_str()) == 0;
  };
  REQUIRE(eventually(running));
  for (const char* method : {"tasks/get", "tasks/cancel"}) {
    INFO(method);
    CHECK(response_of(post_2026(gw, method, {{"taskId", id}}, true,
                                "token-beta"))["error"]["code"] == -32602);
  }
  CHECK(running());
  CHECK(response_of(post_2026(gw, "tasks/cancel", {{"taskId", id}}, true, "token-alpha"))
            .contains("result"));
  CHECK(eventually([&] { return !running(); }));
  CHECK(response_of(post_2026(gw, "tasks/get", {{"taskId", id}}, true,
                              "token-alpha"))["result"]["status"] == "cancelled");
}

TEST_CASE("2026-07-28: at its task cap a tenant's call runs plain instead of being refused",
          "[integration][tasks]") {
  GatewayProcess gw({"--tasks-per-tenant", "1", "--task-after", "0"});
  const std::string marker = "sleep 618";
  auto made = response_of(post_2026(gw, "tools/call", bash_call(marker, 60), true));
  REQUIRE(made["result"]["resultType"] == "task");
  // The tenant's one task runs: the next call may run plain, so it does (within the plain
  // timeout) and gets its own result.
  auto plain = response_of(post_2026(gw, "tools/call", bash_call("echo plain", 5), true));
  CHECK(plain["result"]["resultType"] == "complete");
  CHECK(plain["result"]["structuredContent"]["stdout"] == "plain\n");
  CHECK(response_of(post_2026(gw, "tasks/cancel", {{"taskId", made["result"]["taskId"]}}, true))
            .contains("result"));
}
