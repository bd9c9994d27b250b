// Hibernation under pressure, on the real binary: at --max-sandboxes a new sandbox hibernates
// the least recently used idle one (its /work kept for its next call) instead of ending it; two
// sandboxes wanting room at once each get their own; another tenant never sees what was kept.
// (With hibernation off the idle sandbox is ended: session_cap_test.cpp. Under the memory
// budget: memory_budget_test.cpp.)
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <future>
#include <sstream>

#include "gateway_process.hpp"
#include "two_tenant_dir.hpp"

using namespace sandgate::test;
using nlohmann::json;

namespace {

struct Setup : TwoTenantDir {
  Setup() : TwoTenantDir("pressure") {}
  // A gateway with room for `sandboxes` and an idle hibernation far beyond the test's length:
  // every hibernation seen here is one made for room.
  std::vector<std::string> args(int sandboxes) const {
    return {"--token-file", tokens.string(), "--state-dir", state.string(), "--max-sandboxes",
            std::to_string(sandboxes),
            // No tenant share below the cap (at its share a tenant makes room from its own
            // first): these tests are of the gateway's cap (shares: tenant_sandboxes_test.cpp).
            "--tenant-max-sandboxes", "1000", "--sandbox-hibernate-after", "3600"};
  }
};

json execute_message(const std::string& code, int id) {
  return tool_call_message(id, "execute", execute_arguments(code, "bash"));
}

json execute(GatewayProcess& gw, const std::string& session, const std::string& token,
             const std::string& code, int id) {
  auto r = gw.post(execute_message(code, id), session, token);
  REQUIRE(r.status == 200);
  return r.json_body()["result"];
}

const std::string kForRoom = "sandgate_hibernations_total{reason=\"sandbox_cap\"}";
const std::string kEndedForRoom = "sandgate_sandboxes_evicted_total{reason=\"sandbox_cap\"}";
const std::string kResumed =
    "The sandbox was resumed from hibernation: files in /work are kept; processes and "
    "interpreter variables were not.";

std::string stdout_of(const json& result) {
  return result["structuredContent"].value("stdout", std::string());
}

bool mentions_resumed(const json& result) {
  return result.dump().find("resumed from hibernation") != std::string::npos;
}

}  // namespace

TEST_CASE(
    "at the sandbox cap the least recently used idle sandbox is hibernated, and its session "
    "resumes with its files",
    "[integration][hibernate][pressure]") {
  Setup s;
  GatewayProcess gw(s.args(2), {});
  std::string a = gw.initialize("tok-a"), b = gw.initialize("tok-a"), c = gw.initialize("tok-a");
  REQUIRE(execute(gw, a, "tok-a", "echo from-a > /work/a.txt", 1)["isError"] == false);
  REQUIRE(execute(gw, b, "tok-a", "echo from-b > /work/b.txt", 2)["isError"] == false);
  REQUIRE(metric(gw, "sandgate_sandboxes") == 2);

  // Both slots taken: c's first call runs, a (used least recently) is hibernated, not ended.
  auto fresh = execute(gw, c, "tok-a", "ls /work; echo c ran", 3);
  REQUIRE(fresh["isError"] == false);
  CHECK(stdout_of(fresh) == "c ran\n");
  CHECK_FALSE(mentions_resumed(fresh));
  CHECK(metric(gw, kForRoom) == 1);
  CHECK(metric(gw, kEndedForRoom) == 0);
  CHECK(metric(gw, "sandgate_hibernations_total{reason=\"idle\"}") == 0);
  CHECK(metric(gw, "sandgate_sandboxes") == 2);
  CHECK(metric(gw, "sandgate_sandboxes_hibernated") == 1);

  // a's next call finds its file, told once that it was resumed; b makes room for it now.
  auto back = execute(gw, a, "tok-a", "cat /work/a.txt", 4);
  REQUIRE(back["isError"] == false);
  CHECK(stdout_of(back) == "from-a\n");
  CHECK(back["content"][0]["text"] == kResumed);
  CHECK(metric(gw, kForRoom) == 2);
  CHECK(metric(gw, "sandgate_resumes_total") == 1);
  auto again = execute(gw, a, "tok-a", "cat /work/a.txt", 5);
  CHECK(stdout_of(again) == "from-a\n");
  CHECK_FALSE(mentions_resumed(again));
  auto b_back = execute(gw, b, "tok-a", "cat /work/b.txt", 6);
  CHECK(stdout_of(b_back) == "from-b\n");
  CHECK(b_back["content"][0]["text"] == kResumed);
  CHECK(metric(gw, "sandgate_sandboxes") == 2);
  CHECK(metric(gw, kEndedForRoom) == 0);
}

TEST_CASE("two sandboxes that need room at the same moment each get one",
          "[integration][hibernate][pressure]") {
  Setup s;
  GatewayProcess gw(s.args(2), {});
  std::string a = gw.initialize("tok-a"), b = gw.initialize("tok-a");
  std::string c = gw.initialize("tok-a"), d = gw.initialize("tok-a");
  REQUIRE(execute(gw, a, "tok-a", "echo from-a > /work/f", 1)["isError"] == false);
  REQUIRE(execute(gw, b, "tok-a", "echo from-b > /work/f", 2)["isError"] == false);

  // Both new calls may pick a first: one hibernates it, the other moves on to b (never waiting
  // for a's hibernation to finish and then finding nothing).
  auto run_c = std::async(std::launch::async,
                          [&] { return gw.post(execute_message("echo c ran", 3), c, "tok-a"); });
  auto run_d = std::async(std::launch::async,
                          [&] { return gw.post(execute_message("echo d ran", 4), d, "tok-a"); });
  auto c_reply = run_c.get(), d_reply = run_d.get();
  REQUIRE(c_reply.status == 200);
  REQUIRE(d_reply.status == 200);
  INFO("c: " << c_reply.body.substr(0, 400) << "\nd: " << d_reply.body.substr(0, 400));
  CHECK(stdout_of(c_reply.json_body()["result"]) == "c ran\n");
  CHECK(stdout_of(d_reply.json_body()["result"]) == "d ran\n");
  CHECK(metric(gw, kForRoom) == 2);
  CHECK(metric(gw, "sandgate_sandboxes_hibernated") == 2);
  CHECK(metric(gw, "sandgate_sandboxes") == 2);

  // Neither lost its files.
  CHECK(stdout_of(execute(gw, a, "tok-a", "cat /work/f", 5)) == "from-a\n");
  CHECK(stdout_of(execute(gw, b, "tok-a", "cat /work/f", 6)) == "from-b\n");
}

TEST_CASE("a sandbox hibernated for room is never readable through another tenant",
          "[integration][hibernate][pressure]") {
  Setup s;
  GatewayProcess gw(s.args(1), {});
  std::string a = gw.initialize("tok-a");
  REQUIRE(execute(gw, a, "tok-a", "echo secret-of-a > /work/secret", 1)["isError"] == false);

  // Tenant b's first call takes the only slot: a's sandbox is hibernated for it.
  std::string b = gw.initialize("tok-b");
  auto theirs = execute(gw, b, "tok-b", "ls -A /work; cat /work/secret 2>&1; echo end", 2);
  REQUIRE(theirs["isError"] == false);
  CHECK(stdout_of(theirs).find("secret-of-a") == std::string::npos);
  CHECK(stdout_of(theirs).rfind("cat: /work/secret: No such file or directory", 0) == 0);
  CHECK_FALSE(mentions_resumed(theirs));
  REQUIRE(metric(gw, kForRoom) == 1);

  // b's token cannot reach a's session at all: answered like a session that does not exist.
  auto foreign = gw.post(execute_message("cat /work/secret", 3), a, "tok-b");
  CHECK(foreign.status == 404);
  CHECK(foreign.body.find("secret-of-a") == std::string::npos);
  CHECK(
      gw.request(http::verb::delete_, "/mcp", "", GatewayProcess::mcp_headers(a, "tok-b")).status ==
      404);
  // Another new session of b starts empty too (and hibernates b's first for room).
  std::string b2 = gw.initialize("tok-b");
  auto second = execute(gw, b2, "tok-b", "ls -A /work; echo end", 4);
  CHECK(stdout_of(second) == "end\n");
  CHECK_FALSE(mentions_resumed(second));

  // a's own token still gets it back, intact.
  auto mine = execute(gw, a, "tok-a", "cat /work/secret", 5);
  CHECK(stdout_of(mine) == "secret-of-a\n");
  CHECK(mine["content"][0]["text"] == kResumed);
}
