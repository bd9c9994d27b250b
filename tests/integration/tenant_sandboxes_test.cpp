// Each tenant's share of the live sandboxes, on the real binary: a call queued for a gateway
// slot does not pin its sandbox (another tenant's call gets the room), a tenant at its share
// makes room from its own sandboxes and never another tenant's, and one whose share is all in
// use is refused a new one while another tenant still gets one.
#include <signal.h>

#include <future>
#include <sstream>

#include "gateway_process.hpp"
#include "two_tenant_dir.hpp"

using namespace sandgate::test;
using nlohmann::json;

namespace {

json execute_message(const std::string& code, int id, int timeout_s = 60) {
  return tool_call_message(id, "execute", execute_arguments(code, "bash", timeout_s));
}

json execute(GatewayProcess& gw, const std::string& session, const std::string& token,
             const std::string& code, int id) {
  auto r = gw.post(execute_message(code, id), session, token);
  REQUIRE(r.status == 200);
  return r.json_body()["result"];
}

std::string stdout_of(const json& result) {
  return result["structuredContent"].value("stdout", std::string());
}

bool mentions_resumed(const json& result) {
  return result.dump().find("resumed from hibernation") != std::string::npos;
}

const std::string kForShare = "sandgate_hibernations_total{reason=\"tenant_share\"}";
const std::string kForCap = "sandgate_hibernations_total{reason=\"sandbox_cap\"}";

std::vector<std::string> gateway_args(const TwoTenantDir& dir, std::vector<std::string> more) {
  std::vector<std::string> args = {"--token-file",
                                   dir.tokens.string(),
                                   "--state-dir",
                                   dir.state.string(),
                                   "--timeout-max",
                                   "900",
                                   "--sandbox-hibernate-after",
                                   "3600"};
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

}  // namespace

TEST_CASE("a call waiting for a gateway slot does not pin its session's sandbox",
          "[integration][tenant_share]") {
  TwoTenantDir dir("queued-pin");
  // Room for two sandboxes, both of which tenant a may hold; a runs one call at a time.
  GatewayProcess gw(
      gateway_args(dir, {"--max-sandboxes", "2", "--tenant-max-sandboxes", "2",
                         "--max-concurrent-calls", "2", "--tenant-max-concurrent-calls", "1"}),
      {});
  std::string running = gw.initialize("tok-a"), queued = gw.initialize("tok-a");
  std::string other = gw.initialize("tok-b");
  REQUIRE(execute(gw, queued, "tok-a", "echo mine > /work/f", 1)["isError"] == false);

  const std::string long_call = "sleep 623";
  std::future<HttpReply> long_reply, queued_reply;
  StopGatewayFirst stop_first{gw};
  long_reply = std::async(std::launch::async, [&] {
    return gw.post(execute_message(long_call, 2, 900), running, "tok-a");
  });
  REQUIRE(eventually([&] { return sandboxed_running(long_call) == 1; }));
  REQUIRE(metric(gw, "sandgate_sandboxes") == 2);
  // a's second call waits for a's only call slot, its sandbox idle meanwhile.
  queued_reply = std::async(std::launch::async, [&] {
    return gw.post(execute_message("cat /work/f", 3), queued, "tok-a");
  });
  REQUIRE(eventually([&] { return metric(gw, "sandgate_calls_waiting") == 1; }));

  // b's first call needs a sandbox: the queued call's is hibernated for it.
  auto theirs = execute(gw, other, "tok-b", "echo b ran", 4);
  INFO(theirs.dump().substr(0, 600));
  CHECK(theirs["isError"] == false);
  CHECK(stdout_of(theirs) == "b ran\n");
  CHECK(metric(gw, kForCap) == 1);
  CHECK(sandboxed_running(long_call) == 1);

  // The long call ends; the queued one then resumes its sandbox with its file.
  for (pid_t pid : sandboxed_pids(long_call)) ::kill(pid, SIGKILL);
  REQUIRE(long_reply.wait_for(std::chrono::seconds(60)) == std::future_status::ready);
  REQUIRE(queued_reply.wait_for(std::chrono::seconds(60)) == std::future_status::ready);
  auto back = queued_reply.get();
  REQUIRE(back.status == 200);
  auto result = back.json_body()["result"];
  CHECK(stdout_of(result) == "mine\n");
  CHECK(mentions_resumed(result));
}

TEST_CASE(
    "at its share of live sandboxes a tenant's new sandbox hibernates its own least recently "
    "used one, never another tenant's",
    "[integration][tenant_share]") {
  TwoTenantDir dir("tenant-share");
  GatewayProcess gw(gateway_args(dir, {"--max-sandboxes", "8", "--tenant-max-sandboxes", "2"}), {});
  std::string b = gw.initialize("tok-b");
  REQUIRE(execute(gw, b, "tok-b", "echo from-b > /work/f", 1)["isError"] == false);
  std::string a1 = gw.initialize("tok-a"), a2 = gw.initialize("tok-a"), a3 = gw.initialize("tok-a");
  REQUIRE(execute(gw, a1, "tok-a", "echo from-a1 > /work/f", 2)["isError"] == false);
  REQUIRE(execute(gw, a2, "tok-a", "echo from-a2 > /work/f", 3)["isError"] == false);
  REQUIRE(metric(gw, kForShare) == 0);

  // a's third sandbox: a1 (a's least recently used) goes, though b's is older still.
  auto third = execute(gw, a3, "tok-a", "echo a3 ran", 4);
  CHECK(stdout_of(third) == "a3 ran\n");
  CHECK(metric(gw, kForShare) == 1);
  CHECK(metric(gw, kForCap) == 0);
  CHECK(metric(gw, "sandgate_sandboxes") == 3);

  auto b_again = execute(gw, b, "tok-b", "cat /work/f", 5);
  CHECK(stdout_of(b_again) == "from-b\n");
  CHECK_FALSE(mentions_resumed(b_again));
  // a1 comes back with its file, and a2 (now a's least recently used) makes room for it.
  auto a1_again = execute(gw, a1, "tok-a", "cat /work/f", 6);
  CHECK(stdout_of(a1_again) == "from-a1\n");
  CHECK(mentions_resumed(a1_again));
  CHECK(metric(gw, kForShare) == 2);
  CHECK(metric(gw, "sandgate_sandboxes") == 3);
}

TEST_CASE(
    "a tenant whose share of sandboxes is all in use is told so, while another tenant still "
    "gets one",
    "[integration][tenant_share]") {
  TwoTenantDir dir("share-in-use");
  GatewayProcess gw(
      gateway_args(dir, {"--max-sandboxes", "4", "--tenant-max-sandboxes", "1",
                         "--max-concurrent-calls", "4", "--tenant-max-concurrent-calls", "4"}),
      {});
  std::string a1 = gw.initialize("tok-a"), a2 = gw.initialize("tok-a");
  std::string b = gw.initialize("tok-b");
  const std::string long_call = "sleep 624";
  std::future<HttpReply> long_reply;
  StopGatewayFirst stop_first{gw};
  long_reply = std::async(std::launch::async,
                          [&] { return gw.post(execute_message(long_call, 1, 900), a1, "tok-a"); });
  REQUIRE(eventually([&] { return sandboxed_running(long_call) == 1; }));

  auto refused = execute(gw, a2, "tok-a", "echo never", 2);
  CHECK(refused["isError"] == true);
  CHECK(refused.dump().find("its share of live sandboxes (1)") != std::string::npos);
  CHECK(refused.dump().find("never") == std::string::npos);
  CHECK(sandboxed_running(long_call) == 1);

  auto theirs = execute(gw, b, "tok-b", "echo b ran", 3);
  CHECK(stdout_of(theirs) == "b ran\n");
  for (pid_t pid : sandboxed_pids(long_call)) ::kill(pid, SIGKILL);
  REQUIRE(long_reply.wait_for(std::chrono::seconds(60)) == std::future_status::ready);
  // With a's sandbox free again, a2's call gets one (a1's is hibernated for it).
  auto later = execute(gw, a2, "tok-a", "echo now", 4);
  CHECK(stdout_of(later) == "now\n");
  CHECK(metric(gw, kForShare) == 1);
}
