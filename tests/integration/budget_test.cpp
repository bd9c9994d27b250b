// Tenant budgets on the real binary (issue #28): a tenant's daily or monthly budget holds across
// its sessions, handles, tasks and a restart of the gateway (SIGTERM and SIGKILL); the call running
// when it is spent ends with a tool error saying which budget and when it resets, new calls get
// the same and start no sandbox, and another tenant runs on. Prices make spend fast: $1 per
// CPU-second, memory nearly free.
#include <signal.h>

#include "cpu_priced.hpp"
#include "gateway_process.hpp"
#include "two_tenant_dir.hpp"

using namespace sandgate::test;
using nlohmann::json;

namespace {

// tools/call execute in `session` as `token`'s tenant; the CallToolResult.
json call(GatewayProcess& gw, const std::string& session, const std::string& token,
          const std::string& code, int id = 1) {
  auto r = gw.post(tool_call_message(id, "execute", execute_arguments(code, "python", 120)),
                   session, token);
  REQUIRE(r.status == 200);
  return r.json_body()["result"];
}

// The JSON-RPC response a reply carries, as a JSON body or among an event stream's messages.
json rpc_response(const HttpReply& reply) {
  if (reply.body.rfind("{", 0) == 0) return reply.json_body();
  std::istringstream lines(reply.body);
  json found;
  for (std::string line; std::getline(lines, line);)
    if (line.rfind("data: {", 0) == 0)
      if (json m = json::parse(line.substr(6)); m.contains("id") && m.contains("result")) found = m;
  return found;
}

bool no_sandbox(GatewayProcess& gw) {
  return sandbox_cgroups_of(gw.pid()) == 0 && children_of(gw.pid()).empty();
}

// The tool error a tenant gets once its budget is spent: which one, its amount, and a reset at
// a UTC midnight.
void check_spent(const json& result, const std::string& budget) {
  CHECK(result["isError"] == true);
  std::string said = tool_text(result);
  INFO(said);
  CHECK(said.find("his tenant's " + budget + " is spent") != std::string::npos);
  CHECK(said.find("until the budget resets at ") != std::string::npos);
  CHECK(said.find("T00:00:00Z") != std::string::npos);
}

}  // namespace

TEST_CASE("a tenant's daily budget holds across its sessions, handles and restarts",
          "[integration][ledger][budget][restart]") {
  TwoTenantDir dir("budget-day", "budget_usd_per_day=1.5");
  {
    GatewayProcess gw(cpu_priced(dir));
    std::string first = gw.initialize("tok-a");
    auto ran = call(gw, first, "tok-a", cpu_burn(0.5));
    INFO(tool_text(ran));
    REQUIRE(ran["isError"] == false);
    // A second session of the same tenant: its loop is stopped once the tenant's spend (both
    // sessions') reaches the budget — its own spend cap is far away.
    std::string second = gw.initialize("tok-a");
    auto stopped = call(gw, second, "tok-a", "while True: pass", 2);
    CHECK(tool_text(stopped).find("Sandbox ended: this tenant's daily budget of $1.50 is spent") !=
          std::string::npos);
    check_spent(stopped, "daily budget of $1.50");
    // Every sandbox of the tenant ended, the idle one too; a new session, and a handle on the
    // 2026-07-28 path, start none.
    REQUIRE(eventually([&] { return no_sandbox(gw); }));
    std::string third = gw.initialize("tok-a");
    check_spent(call(gw, third, "tok-a", "print(1)", 3), "daily budget of $1.50");
    check_spent(gw.call_stateless("execute", {{"code", "echo hi"}, {"language", "bash"}}, "tok-a"),
                "daily budget of $1.50");
    CHECK(no_sandbox(gw));
    // Another tenant runs on.
    std::string b = gw.initialize("tok-b");
    auto other = call(gw, b, "tok-b", "print('b runs')", 4);
    CHECK(other["isError"] == false);
    CHECK(other["structuredContent"]["stdout"] == "b runs\n");
    // Killed without warning: what it saved (every second) is what the next start reads.
    CHECK(gw.stop(SIGKILL) == 128 + SIGKILL);
  }
  {
    // Started again on the same state directory: the budget is still spent.
    GatewayProcess again(cpu_priced(dir));
    std::string s = again.initialize("tok-a");
    check_spent(call(again, s, "tok-a", "print(1)"), "daily budget of $1.50");
    CHECK(no_sandbox(again));
    CHECK(again.stop(SIGTERM) == 0);
  }
  // And after a SIGTERM.
  GatewayProcess third(cpu_priced(dir));
  std::string s = third.initialize("tok-a");
  check_spent(call(third, s, "tok-a", "print(1)"), "daily budget of $1.50");
}

TEST_CASE("the default monthly budget applies to tenants without their own",
          "[integration][ledger][budget]") {
  TwoTenantDir dir("budget-month", "budget_usd_per_month=100");
  GatewayProcess gw(cpu_priced(dir, {"--budget-usd-per-month", "0.4"}));
  std::string b = gw.initialize("tok-b");
  auto first = call(gw, b, "tok-b", cpu_burn(0.1));
  INFO(tool_text(first));
  REQUIRE(first["isError"] == false);
  // The running call is ended (not refused before it ran).
  auto stopped = call(gw, b, "tok-b", cpu_burn(30), 2);
  CHECK(tool_text(stopped).find("Sandbox ended: this tenant's monthly budget of $0.40 is spent") !=
        std::string::npos);
  check_spent(stopped, "monthly budget of $0.40");
  check_spent(call(gw, b, "tok-b", "print(1)", 3), "monthly budget of $0.40");
  // Run as a task (2025-11-25's tasks): accepted, and the task's result is the same tool error.
  auto rpc = [](const std::string& method, json params, int id) {
    return json{{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", std::move(params)}};
  };
  auto created = gw.post(
      as_task(tool_call_message(10, "execute", execute_arguments("echo hi", "bash"))), b, "tok-b");
  REQUIRE(created.status == 200);
  const std::string task = rpc_response(created)["result"]["task"]["taskId"];
  REQUIRE(eventually([&] {
    auto got = gw.post(rpc("tasks/get", {{"taskId", task}}, 11), b, "tok-b");
    return got.status == 200 && rpc_response(got)["result"]["status"] != "working";
  }));
  auto from_task = gw.post(rpc("tasks/result", {{"taskId", task}}, 12), b, "tok-b");
  REQUIRE(from_task.status == 200);
  check_spent(rpc_response(from_task)["result"], "monthly budget of $0.40");
  CHECK(eventually([&] { return no_sandbox(gw); }));
  // Tenant a's own budget is larger than the default: past $0.40 its calls still run.
  std::string a = gw.initialize("tok-a");
  auto ran = call(gw, a, "tok-a", cpu_burn(0.6), 4);
  INFO(tool_text(ran));
  CHECK(ran["isError"] == false);
  CHECK(ran["structuredContent"]["spend_usd"].get<double>() > 0.4);
  // Once the ledger has saved it twice more (the book counts what is saved), a call is still
  // let in.
  const std::string saves = "sandgate_ledger_saves_total{outcome=\"ok\"}";
  const long saved_before = metric(gw, saves);
  REQUIRE(eventually([&] { return metric(gw, saves) >= saved_before + 2; }));
  auto again = call(gw, a, "tok-a", "print('still')", 5);
  INFO(tool_text(again));
  CHECK(again["isError"] == false);
  CHECK(again["structuredContent"]["stdout"] == "still\n");
}
