// Code mode (issue #45), end to end: a model's client calls execute; the code in its tenant's
// sandbox calls the tenant's upstream MCP tools through the gateway — real upstreams
// (@modelcontextprotocol/server-everything, and an upstream made with the official SDKs that
// requires a bearer token), real sandboxes, the real in-sandbox libraries.
#include <signal.h>

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <thread>

#include "gateway_process.hpp"
#include "package_index_server.hpp"
#include "temp_file.hpp"
#include "test_upstreams.hpp"
#include "tests/support/skip.hpp"

using namespace sandgate::test;
using nlohmann::json;

namespace {

std::string stdout_of(const json& result) {
  return result.value("structuredContent", json::object()).value("stdout", "");
}
std::string stderr_of(const json& result) {
  return result.value("structuredContent", json::object()).value("stderr", "");
}

// The "... listening on URL" an upstream printed: its URL.
std::string url_of(const ServerProcess& upstream) {
  return "http://127.0.0.1:" + std::to_string(upstream.port()) + "/mcp";
}

bool upstreams_can_run() {
  auto missing = node_modules_missing();
  if (missing.empty()) return true;
  skip_test("node-modules", missing);
  return false;
}

struct Client {
  Client(GatewayProcess& gateway, std::string bearer) : gw(gateway), token(std::move(bearer)) {
    session = gw.initialize(token);
    REQUIRE(!session.empty());
  }
  json run(const std::string& code, const std::string& language = "python", int timeout_s = 60) {
    auto reply =
        gw.post(tool_call_message(++id, "execute", execute_arguments(code, language, timeout_s)),
                session, token);
    REQUIRE(reply.status == 200);
    return reply.json_body()["result"];
  }
  std::string description() {
    auto tools =
        gw.post({{"jsonrpc", "2.0"}, {"id", ++id}, {"method", "tools/list"}}, session, token);
    return tools.json_body()["result"]["tools"][0]["description"];
  }
  GatewayProcess& gw;
  std::string token;
  std::string session;
  int id = 1;
};

// A gateway whose tenants alice (upstreams=`alice_upstreams`) and bob (none) call `definitions`.
struct CodeModeWorld {
  TempFile tokens{"code-mode-tokens"};
  TempFile file{"code-mode-upstreams.json"};
  TempFile log{"code-mode-gateway.log"};
  std::optional<GatewayProcess> gw;

  CodeModeWorld(const json& definitions, const std::string& alice_upstreams,
                std::vector<std::string> flags = {}) {
    tokens.write(digest("alice-token") + " alice upstreams=" + alice_upstreams + "\n" +
                 digest("bob-token") + " bob\n");
    file.write(definitions.dump(2), 0600);
    std::vector<std::string> args{"--token-file",     tokens.path.string(), "--upstreams",
                                  file.path.string(), "--log-level",        "info"};
    args.insert(args.end(), flags.begin(), flags.end());
    gw.emplace(args, std::vector<std::string>{}, false,
               std::vector<std::string>{EXEC_WITH_BINARY, "--stderr", log.path.string(), "--"});
  }
};

}  // namespace

TEST_CASE("a tenant's code calls server-everything's tools from Python, JavaScript and bash",
          "[integration][upstream][code_mode]") {
  if (!upstreams_can_run()) return;
  auto everything = start_everything();
  CodeModeWorld world(
      {{"everything", {{"url", url_of(*everything)}, {"description", "the MCP reference server"}}}},
      "everything");
  Client alice(*world.gw, "alice-token");

  // The model is told which upstreams it has and how to discover their tools.
  auto description = alice.description();
  CHECK(description.find("- everything: the MCP reference server") != std::string::npos);
  CHECK(description.find("sandgate_tools.reference()") != std::string::npos);

  auto python = alice.run(
      "import sandgate_tools as t\n"
      "print(t.everything.echo(message='hello'))\n"
      "print(t.call('everything', 'get-sum', {'a': 2, 'b': 3}))\n"
      "print(t.everything.get_sum(a=20, b=22))\n"
      "print(t.everything.get_structured_content(location='Chicago')['temperature'] is not None)\n"
      "image = [x for x in t.everything.get_tiny_image() if isinstance(x, bytes)][0]\n"
      "print(image[:8] == b'\\x89PNG\\r\\n\\x1a\\n')\n"
      "print('everything.get-sum(a: number, b: number)' in t.reference('everything'))\n"
      "print(sorted(s['name'] for s in t.list()))\n"
      "print('completed' in str(t.everything.trigger_long_running_operation(duration=1, "
      "steps=2)))\n"
      "try:\n"
      "    t.everything.get_sum(a='two', b=1)\n"
      "except t.ToolError as e:\n"
      "    print(e.kind)\n");
  INFO(python.dump());
  CHECK(stdout_of(python) ==
        "Echo: hello\nThe sum of 2 and 3 is 5.\nThe sum of 20 and 22 is 42.\nTrue\nTrue\nTrue\n"
        "['everything']\nTrue\ntool_error\n");

  // 50 calls in one loop, then 50 at once, from Node.
  auto node = alice.run(
      "const t = require('sandgate_tools');\n"
      "(async () => {\n"
      "  let n = 0;\n"
      "  for (let i = 0; i < 50; i++) n += (await t.everything.echo({message: 'x' + i})).length;\n"
      "  const all = await Promise.all([...Array(50).keys()].map(\n"
      "      (i) => t.everything.get_sum({a: i, b: 1})));\n"
      "  console.log(n, all.length, all[49]);\n"
      "})();\n",
      "javascript");
  INFO(node.dump());
  CHECK(stdout_of(node) == "440 50 The sum of 49 and 1 is 50.\n");

  // 50 at once from Python threads.
  auto threads = alice.run(
      "import sandgate_tools as t\n"
      "from concurrent.futures import ThreadPoolExecutor\n"
      "with ThreadPoolExecutor(16) as pool:\n"
      "    sums = list(pool.map(lambda i: t.everything.get_sum(a=i, b=i), range(50)))\n"
      "print(len(sums), sums[-1])\n");
  INFO(threads.dump());
  CHECK(stdout_of(threads) == "50 The sum of 49 and 49 is 98.\n");

  auto bash = alice.run(
      "sandgate-tool everything echo '{\"message\": \"from bash\"}'\n"
      "sandgate-tool everything nope '{}' ; echo \"status $?\"\n",
      "bash");
  INFO(bash.dump());
  CHECK(stdout_of(bash).rfind("\"Echo: from bash\"\nstatus 1\n", 0) == 0);
  CHECK(stderr_of(bash).find("nope") != std::string::npos);

  // Bob has no upstreams: nothing in his description, and nobody answers his sandbox's channel
  // (every sandbox of a gateway with upstreams has its socket, so that the ready pool serves
  // every tenant): a call says so.
  Client bob(*world.gw, "bob-token");
  CHECK(bob.description().find("sandgate_tools") == std::string::npos);
  auto none = bob.run(
      "import sandgate_tools as t\n"
      "try:\n"
      "    t.call('everything', 'echo', {'message': 'not mine'})\n"
      "except t.ToolError as e:\n"
      "    print(e.kind, '|', e)\n");
  INFO(none.dump());
  CHECK(stdout_of(none).rfind("unavailable | no upstream MCP server answers this sandbox", 0) == 0);

  CHECK(metric(*world.gw,
               "sandgate_upstream_tool_calls_total{upstream=\"everything\",outcome=\"ok\"}") >=
        150);
  // Metadata only: the log names the tool, never what it was given or answered.
  auto logged = world.log.read();
  CHECK(logged.find("\"event\":\"tool_call\"") != std::string::npos);
  CHECK(logged.find("from bash") == std::string::npos);
}

TEST_CASE(
    "the gateway's credential reaches the upstream and nowhere in the sandbox, only allowed "
    "tools are callable, and errors are the model's to read",
    "[integration][upstream][code_mode]") {
  if (!upstreams_can_run()) return;
  TempFile token{"code-mode-upstream-token"};
  TempFile events{"code-mode-upstream-events"};
  const std::string secret = "sk-upstream-7c1e4f0a9b";
  token.write(secret + "\n", 0600);
  auto upstream = start_test_upstream("2025", token.path, events.path);
  json definitions = {
      {"tickets",
       {{"url", url_of(*upstream)},
        {"headers", {{"Authorization", {{"file", token.path.string()}, {"prefix", "Bearer "}}}}},
        {"tools", {"echo", "fail", "ask", "big"}},
        {"description", "the ticket system"}}}};
  CodeModeWorld world(definitions, "tickets");
  Client alice(*world.gw, "alice-token");

  auto called = alice.run(
      "import sandgate_tools as t\n"
      "print(t.tickets.echo(message='ok'))\n"
      "try:\n"
      "    t.call('tickets', 'change')\n"
      "except t.ToolError as e:\n"
      "    print(e.kind, '|', e)\n"
      "try:\n"
      "    t.call('elsewhere', 'echo')\n"
      "except t.ToolError as e:\n"
      "    print(e.kind, '|', e)\n"
      "try:\n"
      "    t.tickets.fail()\n"
      "except t.ToolError as e:\n"
      "    print(e.kind)\n"
      "try:\n"
      "    t.tickets.ask()\n"
      "    print('answered')\n"
      "except t.ToolError as e:\n"
      "    print('ask', e.kind)\n"
      "try:\n"
      "    t.tickets.big()\n"
      "except t.ToolError as e:\n"
      "    print(e.kind, '|', e)\n");
  INFO(called.dump());
  auto out = stdout_of(called);
  CHECK(out.find("Echo: ok\n") == 0);
  CHECK(out.find("not_allowed | tool 'change' of upstream 'tickets' is not one this sandbox may "
                 "call") != std::string::npos);
  CHECK(out.find("not_allowed | this sandbox may call no upstream named 'elsewhere'; it may "
                 "call: tickets") != std::string::npos);
  CHECK(out.find("\ntool_error\n") != std::string::npos);
  CHECK(out.find("\nask ") != std::string::npos);  // refused or failed, never hung
  CHECK(out.find("too_large | upstream 'tickets' answered more than") != std::string::npos);
  // The upstream asked its client for input and was refused.
  CHECK(wait_for_event(events.path, "elicitation_refused", std::chrono::seconds(5)));
  CHECK_FALSE(wait_for_event(events.path, "unauthorized", std::chrono::milliseconds(0)));

  // Nowhere the sandbox can look: its environment, its files, its processes, what the channel
  // lists and says.
  // Every writable place and sandgate's own files (the system's are the host's, read-only);
  // /code holds this script, which names what it looks for.
  const std::string look = "grep -rsl '" + secret +
                           "' /sandgate /work /tmp /dev/shm /etc /env | head -3\n"
                           "cat /proc/*/environ 2>/dev/null | tr '\\0' '\\n' | grep -c '" +
                           secret +
                           "'\n"
                           "sandgate-tool list | grep -c '" +
                           secret +
                           "'\n"
                           "sandgate-tool reference | grep -c '" +
                           secret + "'\n";
  auto search = alice.run(look, "bash");
  INFO(search.dump());
  CHECK(stdout_of(search) == "0\n0\n0\n");
  CHECK(world.log.read().find(secret) == std::string::npos);

  // A wrong credential: the upstream refuses it, and the code is told so.
  token.write("not-the-token\n", 0600);
  CodeModeWorld wrong(definitions, "tickets");
  Client carol(*wrong.gw, "alice-token");
  auto refused = carol.run(
      "import sandgate_tools as t\n"
      "try:\n"
      "    t.tickets.echo(message='x')\n"
      "except t.ToolError as e:\n"
      "    print(e.kind, '|', e)\n");
  INFO(refused.dump());
  CHECK(stdout_of(refused).find("refused the gateway's credentials (HTTP 401)") !=
        std::string::npos);
}

TEST_CASE(
    "a hung upstream hits the tool-call timeout, and an execute call that ends first cancels its "
    "upstream call",
    "[integration][upstream][code_mode]") {
  if (!upstreams_can_run()) return;
  TempFile token{"code-mode-hang-token"};
  TempFile events{"code-mode-hang-events"};
  token.write("hang-token\n", 0600);
  auto upstream = start_test_upstream("2025", token.path, events.path);
  json definitions = {
      {"slow",
       {{"url", url_of(*upstream)},
        {"headers", {{"Authorization", {{"file", token.path.string()}, {"prefix", "Bearer "}}}}},
        {"limits", {{"timeout_s", 2}}}}}};
  CodeModeWorld world(definitions, "slow");
  Client alice(*world.gw, "alice-token");

  auto timed = alice.run(
      "import sandgate_tools as t, time\n"
      "start = time.monotonic()\n"
      "try:\n"
      "    t.slow.hang()\n"
      "except t.ToolError as e:\n"
      "    print(e.kind, round(time.monotonic() - start) < 20)\n"
      "print(t.slow.echo(message='after'))\n");
  INFO(timed.dump());
  CHECK(stdout_of(timed) == "timeout True\nEcho: after\n");

  // The execute call's own timeout (3 s) comes before the tool's (2 s here would not: use a
  // definition without a short timeout).
  definitions["slow"]["limits"]["timeout_s"] = 600;
  CodeModeWorld patient(definitions, "slow");
  Client bob_like(*patient.gw, "alice-token");
  std::filesystem::remove(events.path);
  auto cut = bob_like.run("import sandgate_tools as t\nt.slow.hang()\n", "python", 3);
  INFO(cut.dump());
  CHECK(cut.value("isError", false));
  // The upstream saw its call cancelled (notifications/cancelled, or its stream closed).
  CHECK(wait_for_event(events.path, "hang_aborted", std::chrono::seconds(10)));
  // The sandbox serves the next call.
  CHECK(stdout_of(bob_like.run(
            "import sandgate_tools as t\nprint(t.slow.echo(message='next'))\n")) == "Echo: next\n");
}

TEST_CASE("a code-mode tenant's first sandbox comes from the ready pool, its channel answering",
          "[integration][upstream][code_mode][pool]") {
  if (!upstreams_can_run()) return;
  auto everything = start_everything();
  CodeModeWorld world({{"everything", {{"url", url_of(*everything)}}}}, "everything",
                      {"--pool-size", "2"});
  REQUIRE(eventually([&] { return metric(*world.gw, "sandgate_pool_ready") >= 2; },
                     std::chrono::seconds(60)));
  Client alice(*world.gw, "alice-token");
  auto called = alice.run("import sandgate_tools as t\nprint(t.everything.echo(message='warm'))\n");
  INFO(called.dump());
  CHECK(stdout_of(called) == "Echo: warm\n");
  Client bob(*world.gw, "bob-token");
  CHECK(stdout_of(bob.run("print('plain')")) == "plain\n");
  CHECK(metric(*world.gw, "sandgate_pool_takes_total{result=\"hit\"}") == 2);
  CHECK(metric(*world.gw, "sandgate_pool_takes_total{result=\"miss\"}") == 0);
}

TEST_CASE("per-call bounds: tool calls beyond the cap, and none outside an execute call",
          "[integration][upstream][code_mode]") {
  if (!upstreams_can_run()) return;
  auto everything = start_everything();
  CodeModeWorld world({{"everything", {{"url", url_of(*everything)}}}}, "everything",
                      {"--tool-calls-per-execute", "5"});
  Client alice(*world.gw, "alice-token");
  auto capped = alice.run(
      "import sandgate_tools as t\n"
      "done = 0\n"
      "try:\n"
      "    for i in range(10):\n"
      "        t.everything.echo(message=str(i))\n"
      "        done += 1\n"
      "except t.ToolError as e:\n"
      "    print(done, e.kind, '|', e)\n");
  INFO(capped.dump());
  CHECK(stdout_of(capped).rfind("5 limit | this execute call already made 5 tool calls", 0) == 0);
  // The next execute call counts afresh.
  auto next = alice.run("import sandgate_tools as t\nprint(t.everything.echo(message='again'))\n");
  CHECK(stdout_of(next) == "Echo: again\n");

  // A thread left running after its execute call ended makes no tool call. It tries once, two
  // seconds after the call; the test looks only after that, and again while it has no answer
  // (a loaded machine can be slow to start it), each look a call of a few milliseconds.
  auto left = alice.run(
      "import threading, time, sandgate_tools as t\n"
      "late = []\n"
      "def later():\n"
      "    time.sleep(2)\n"
      "    try:\n"
      "        t.everything.echo(message='late')\n"
      "        late.append('made')\n"
      "    except t.ToolError as e:\n"
      "        late.append(e.kind)\n"
      "threading.Thread(target=later).start()\n");
  INFO(left.dump());
  std::string seen;
  for (int look = 0; look < 20 && (seen.empty() || seen == "[]\n"); ++look) {
    std::this_thread::sleep_for(std::chrono::seconds(look == 0 ? 4 : 1));
    seen = stdout_of(alice.run("print(late)"));
  }
  CHECK(seen == "['no_call']\n");
}

TEST_CASE("the usage ledger counts each tenant's tool calls by upstream, and what they cost",
          "[integration][upstream][code_mode][ledger]") {
  if (!upstreams_can_run()) return;
  auto everything = start_everything();
  TempFile state{"code-mode-state"};
  std::filesystem::create_directories(state.path);
  struct RemoveAll {
    std::filesystem::path path;
    ~RemoveAll() { std::filesystem::remove_all(path); }
  } remove_state{state.path};
  CodeModeWorld world(
      {{"everything", {{"url", url_of(*everything)}, {"limits", {{"usd_per_call", 0.01}}}}}},
      "everything", {"--state-dir", state.path.string()});
  Client alice(*world.gw, "alice-token");
  auto made = alice.run(
      "import sandgate_tools as t\n"
      "for i in range(3):\n"
      "    t.everything.echo(message=str(i))\n"
      "print(t.everything.get_sum(a=1, b=2))\n"
      "try:\n"
      "    t.call('nowhere', 'echo', {'message': 'refused: never sent, never counted'})\n"
      "except t.ToolError as e:\n"
      "    print(e.kind)\n");
  INFO(made.dump());
  CHECK(stdout_of(made).find("not_allowed") != std::string::npos);
  Client bob(*world.gw, "bob-token");
  bob.run("print(1)");
  // The sessions end, then the gateway: their sandboxes' last records are the ledger's.
  for (auto* client : {&alice, &bob})
    CHECK(world.gw
              ->request(boost::beast::http::verb::delete_, "/mcp", "",
                        GatewayProcess::mcp_headers(client->session, client->token))
              .status == 200);
  CHECK(world.gw->stop(SIGTERM) == 0);

  auto usage = [&](const std::string& by) {
    auto run =
        run_sandgate("usage --state-dir " + state.path.string() + " --format json --by " + by);
    INFO(run.out);
    REQUIRE(run.status == 0);
    return json::parse(run.out);
  };
  auto by_upstream = usage("upstream");
  INFO(by_upstream.dump());
  REQUIRE(by_upstream.size() == 1);
  CHECK(by_upstream[0]["tenant"] == "alice");
  CHECK(by_upstream[0]["upstream"] == "everything");
  CHECK(by_upstream[0]["tool_calls"] == 4);
  CHECK(by_upstream[0]["usd"].get<double>() == Approx(0.04));
  auto by_tenant = usage("tenant");
  REQUIRE(by_tenant.size() == 2);
  CHECK(by_tenant[0]["tenant"] == "alice");
  CHECK(by_tenant[0]["tool_calls"] == 4);
  CHECK(by_tenant[0]["usd"].get<double>() >= 0.04);  // the calls' prices are in the sandbox's
  CHECK(by_tenant[1]["tool_calls"] == 0);
  auto table = run_sandgate("usage --state-dir " + state.path.string() + " --by upstream");
  INFO(table.out);
  CHECK(table.out.find("TOOL CALLS") != std::string::npos);
  CHECK(table.out.find("total: 4 tool calls") != std::string::npos);
}

TEST_CASE("code mode from a 2026-07-28 client's sandbox handle, against a 2026-07-28 upstream",
          "[integration][upstream][code_mode]") {
  if (!upstreams_can_run()) return;
  TempFile token{"code-mode-modern-token"};
  TempFile events{"code-mode-modern-events"};
  token.write("modern-token\n", 0600);
  auto upstream = start_test_upstream("2026", token.path, events.path);
  CodeModeWorld world(
      {{"modern",
        {{"url", url_of(*upstream)},
         {"headers",
          {{"Authorization", {{"file", token.path.string()}, {"prefix", "Bearer "}}}}}}}},
      "modern");
  auto result = world.gw->call_stateless(
      "execute",
      execute_arguments("import sandgate_tools as t\nprint(t.modern.echo(message='modern'))\n",
                        "python", 60),
      "alice-token");
  INFO(result.dump());
  CHECK(stdout_of(result) == "Echo: modern\n");
  // Alice's tool list names her upstreams: hers alone, never a shared cache's.
  auto list = GatewayProcess::stateless_message("tools/list", json::object());
  auto listed = world.gw->request(boost::beast::http::verb::post, "/mcp", list.dump(),
                                  GatewayProcess::stateless_headers(list, "alice-token"));
  CHECK(listed.json_body()["result"]["cacheScope"] == "private");
  auto bobs = world.gw->request(boost::beast::http::verb::post, "/mcp", list.dump(),
                                GatewayProcess::stateless_headers(list, "bob-token"));
  CHECK(bobs.json_body()["result"]["cacheScope"] == "public");
}

TEST_CASE(
    "a bad upstreams file, or a tenant naming an upstream it does not define, refuses the start",
    "[integration][upstream][code_mode]") {
  TempFile tokens{"code-mode-start-tokens"};
  TempFile file{"code-mode-start-upstreams.json"};
  tokens.write(digest("alice-token") + " alice upstreams=tickets\n");
  auto start = [&] {
    return run_sandgate("--listen 127.0.0.1:0 --pool-size 0 --token-file " + tokens.path.string() +
                        " --upstreams " + file.path.string());
  };
  // Plain http is for loopback only: the credentials would cross the network in the clear.
  file.write(R"({"tickets": {"url": "http://tickets.example/mcp"}})");
  auto remote = start();
  INFO(remote.out);
  CHECK(remote.status == 2);
  CHECK(remote.out.find("upstream 'tickets'") != std::string::npos);
  CHECK(remote.out.find("url") != std::string::npos);

  file.write(R"({"ticket": {"url": "http://127.0.0.1:9/mcp"}})");
  auto typo = start();
  INFO(typo.out);
  CHECK(typo.status == 2);
  CHECK(typo.out.find("tenant 'alice' names upstream 'tickets', which the upstreams file does not "
                      "define") != std::string::npos);
}

TEST_CASE("SIGHUP reads the upstreams file again: a new session calls the upstream it adds",
          "[integration][upstream][code_mode]") {
  if (!upstreams_can_run()) return;
  auto everything = start_everything();
  CodeModeWorld world({{"everything", {{"url", url_of(*everything)}}}}, "everything");
  Client before(*world.gw, "alice-token");
  CHECK(before.description().find("- second") == std::string::npos);

  world.file.write(json({{"everything", {{"url", url_of(*everything)}}},
                         {"second", {{"url", url_of(*everything)}, {"description", "again"}}}})
                       .dump(),
                   0600);
  world.tokens.write(digest("alice-token") + " alice upstreams=everything,second\n" +
                     digest("bob-token") + " bob\n");
  REQUIRE(::kill(world.gw->pid(), SIGHUP) == 0);
  // The reload is seen when a new session's description names the new upstream.
  std::optional<Client> after;
  for (int i = 0; i < 100; ++i) {
    after.emplace(*world.gw, "alice-token");
    if (after->description().find("- second: again") != std::string::npos) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  // A session is equipped when it is made: the one whose description showed the reload may
  // have been made before it; this one is made after.
  after.emplace(*world.gw, "alice-token");
  auto called = after->run("import sandgate_tools as t\nprint(t.second.echo(message='added'))\n");
  INFO(called.dump());
  CHECK(stdout_of(called) == "Echo: added\n");
}

TEST_CASE("hostile bytes on the tool channel get errors, and the channel keeps serving",
          "[integration][upstream][code_mode][hostile_channel]") {
  if (!upstreams_can_run()) return;
  auto everything = start_everything();
  CodeModeWorld world({{"everything", {{"url", url_of(*everything)}}}}, "everything");
  Client alice(*world.gw, "alice-token");
  auto hostile = alice.run(
      "import socket, sandgate_tools as t\n"
      "def talk(data, read=True):\n"
      "    s = socket.socket(socket.AF_UNIX)\n"
      "    s.connect('/sandgate/tools.sock')\n"
      "    try:\n"
      "        s.sendall(data)\n"
      "    except OSError:\n"
      "        pass  # answered and closed before all of it was read\n"
      "    answer = b''\n"
      "    try:\n"
      "        while read:\n"
      "            chunk = s.recv(65536)\n"
      "            if not chunk: break\n"
      "            answer += chunk\n"
      "    except OSError:\n"
      "        pass\n"
      "    finally:\n"
      "        s.close()\n"
      "    return answer.split(b'\\r\\n')[0].decode()\n"
      "print(repr(talk(b'\\x00\\xff garbage\\r\\n\\r\\n')))\n"
      "print(talk(b'GET /' + b'a' * 70000 + b' HTTP/1.1\\r\\n\\r\\n') or 'closed')\n"
      "body = b'{' * 200000\n"
      "print(talk(b'POST /call HTTP/1.1\\r\\nConnection: close\\r\\nContent-Length: "
      "%d\\r\\n\\r\\n' % len(body) + body))\n"
      "big = b'x' * (2 << 20)\n"
      "print(talk(b'POST /call HTTP/1.1\\r\\nConnection: close\\r\\nContent-Length: "
      "%d\\r\\n\\r\\n' % len(big) + big))\n"
      "js = b'{\"server\": 5}'\n"
      "print(talk(b'POST /call HTTP/1.1\\r\\nConnection: close\\r\\nContent-Length: "
      "%d\\r\\n\\r\\n' % len(js) + js))\n"
      "print(talk(b'DELETE /call HTTP/1.1\\r\\nConnection: close\\r\\n\\r\\n'))\n"
      "held = []\n"
      "for i in range(200):\n"
      "    s = socket.socket(socket.AF_UNIX)\n"
      "    try:\n"
      "        s.connect('/sandgate/tools.sock')\n"
      "        held.append(s)\n"
      "    except OSError:\n"
      "        s.close()\n"
      "for s in held: s.close()\n"
      "print(t.everything.echo(message='still here'))\n");
  INFO(hostile.dump());
  CHECK(stdout_of(hostile) ==
        "''\n"  // not HTTP: closed unanswered
        "closed\n"
        "HTTP/1.1 400 Bad Request\n"
        "HTTP/1.1 413 Payload Too Large\n"
        "HTTP/1.1 400 Bad Request\n"
        "HTTP/1.1 404 Not Found\n"
        "Echo: still here\n");
  // The gateway serves the next call too.
  CHECK(stdout_of(alice.run("print(1)")) == "1\n");
}
