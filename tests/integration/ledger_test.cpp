// The usage ledger on the real binary (issue #28): what each tenant's sandboxes used is in
// <state-dir>/ledger.sqlite, equal to what their calls reported, after a SIGTERM and — up to
// the last save interval — after a SIGKILL; `sandgate usage` reads it while the gateway runs;
// a file that is not a sandgate ledger stops the gateway's start and is left as it was.
#include <signal.h>
#include <stdio.h>
#include <sys/wait.h>

#include <cstdlib>
#include <ctime>
#include <thread>

#include "cpu_priced.hpp"
#include "gateway_process.hpp"
#include "two_tenant_dir.hpp"

using namespace sandgate::test;
using nlohmann::json;

namespace {

// A call's result tells its spend rounded to a millionth of a dollar; the ledger keeps it whole.
constexpr double kReportedPrecision = 1e-6;

// The session's total spend as the call's result reported it.
double run(GatewayProcess& gw, const std::string& session, const std::string& token,
           const std::string& code, int id) {
  auto r = gw.post(tool_call_message(id, "execute", execute_arguments(code, "python", 60)), session,
                   token);
  REQUIRE(r.status == 200);
  auto result = r.json_body()["result"];
  REQUIRE(result["isError"] == false);
  return result["structuredContent"]["spend_usd"].get<double>();
}

// `sandgate usage ARGS`.
CliRun usage(const std::string& args) {
  return run_sandgate("usage " + args);
}

json usage_json(const TwoTenantDir& dir, const std::string& more = "") {
  auto c = usage("--state-dir " + dir.state.string() + " --format json " + more);
  REQUIRE(c.status == 0);
  return json::parse(c.out);
}

// What the ledger holds for `tenant` (0 when it has no row, or cannot be read yet: a caller
// waiting for it asks again).
double ledger_usd(const TwoTenantDir& dir, const std::string& tenant) {
  auto c = usage("--state-dir " + dir.state.string() + " --format json --tenant " + tenant);
  if (c.status != 0) return 0;
  for (const auto& row : json::parse(c.out))
    if (row["tenant"] == tenant) return row["usd"].get<double>();
  return 0;
}

}  // namespace

TEST_CASE("each tenant's use is in the ledger, equal to what its calls reported",
          "[integration][ledger]") {
  TwoTenantDir dir("ledger-tenants");
  GatewayProcess gw(cpu_priced(dir));
  std::string a = gw.initialize("tok-a");
  std::string b = gw.initialize("tok-b");
  run(gw, a, "tok-a", cpu_burn(0.2), 1);
  double a_spent = run(gw, a, "tok-a", cpu_burn(0.2), 2);
  double b_spent = run(gw, b, "tok-b", cpu_burn(0.1), 3);
  CHECK(a_spent >= 0.35);
  CHECK(b_spent >= 0.08);
  // Read while the gateway runs: the live sandboxes' totals are saved every second.
  CHECK(eventually([&] { return ledger_usd(dir, "a") >= a_spent - kReportedPrecision; }));
  // The sandboxes end with their sessions: their last records are the ledger's.
  for (auto [session, token] : {std::pair{a, "tok-a"}, std::pair{b, "tok-b"}}) {
    auto headers = GatewayProcess::mcp_headers(session, token);
    CHECK(gw.request(http::verb::delete_, "/mcp", "", headers).status == 200);
  }
  CHECK(gw.stop(SIGTERM) == 0);
  // What the model was told is what was recorded, plus what the sandbox used after the last
  // result until it ended (an idle interpreter, the teardown; memory at a millionth of a
  // dollar): a few hundredths of a CPU-second natively, a few percent of the calls' CPU under
  // software emulation (the VM stage measured +1.8 % and +2.9 %).
  for (auto [tenant, spent] : {std::pair{"a", a_spent}, std::pair{"b", b_spent}}) {
    double recorded = ledger_usd(dir, tenant);
    CHECK(recorded >= spent - kReportedPrecision);
    CHECK(recorded <= spent * 1.1 + 0.02);
  }
  auto by_session = usage_json(dir, "--by session");
  REQUIRE(by_session.size() == 2);
  CHECK(by_session[0]["tenant"] == "a");
  CHECK(by_session[0]["calls"] == 2);
  CHECK(by_session[1]["calls"] == 1);
  // Never a whole session id (a bearer secret): its first characters, as the logs show them.
  CHECK(by_session[0]["session"].get<std::string>() == "session:" + a.substr(0, 8));
  CHECK(by_session[0]["cpu_seconds"].get<double>() >= 0.35);
}

TEST_CASE("a SIGKILLed gateway's ledger holds what was reported before its last save",
          "[integration][ledger][restart]") {
  TwoTenantDir dir("ledger-kill");
  double spent = 0;
  {
    GatewayProcess gw(cpu_priced(dir));
    std::string a = gw.initialize("tok-a");
    spent = run(gw, a, "tok-a", cpu_burn(0.3), 1);
    // Saved while the sandbox lives (every second), not only when it ends.
    // Within a few of those seconds (issue #41: 30 s let a save every 20 s pass).
    CHECK(eventually([&] { return ledger_usd(dir, "a") >= spent - kReportedPrecision; },
                     std::chrono::seconds(5)));
    CHECK(gw.stop(SIGKILL) == 128 + SIGKILL);
  }
  CHECK(ledger_usd(dir, "a") >= spent - kReportedPrecision);
  CHECK(ledger_usd(dir, "a") <= spent * 1.1 + 0.02);
  // A gateway started again adds to the same ledger; a SIGTERM right after a call loses nothing.
  GatewayProcess again(cpu_priced(dir));
  std::string a = again.initialize("tok-a");
  double more = run(again, a, "tok-a", cpu_burn(0.2), 1);
  CHECK(again.stop(SIGTERM) == 0);
  CHECK(ledger_usd(dir, "a") >= spent + more - kReportedPrecision);
  // Today's UTC day, as the gateway's clock says it.
  auto by_day = usage_json(dir, "--by day");
  std::time_t now = std::time(nullptr);
  char today[16];
  std::strftime(today, sizeof today, "%Y-%m-%d", std::gmtime(&now));
  REQUIRE_FALSE(by_day.empty());  // two rows only if the test ran across midnight
  CHECK(by_day.back()["day"] == today);
}

TEST_CASE("a file that is not a sandgate ledger stops the start and is left as it was",
          "[integration][ledger]") {
  TwoTenantDir dir("ledger-foreign");
  std::filesystem::create_directories(dir.state);
  auto file = dir.state / "ledger.sqlite";
  const std::string notes =
      "someone's notes, not a database, long enough to fill a header of a "
      "hundred bytes if it were one, which it is not.\n";
  std::ofstream(file) << notes;
  auto log = dir.dir / "gateway.log";
  std::vector<std::string> argv_s = {EXEC_WITH_BINARY, "--stderr", log.string(), "--",
                                     SANDGATE_BINARY,  "--listen", "127.0.0.1:0"};
  for (const auto& a : cpu_priced(dir)) argv_s.push_back(a);
  // Bounded: a gateway that started after all would fail the test, not hang it.
  std::string command = "timeout 60 ";
  for (const auto& a : argv_s) command += "'" + a + "' ";
  int status = std::system((command + "> /dev/null").c_str());
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 2);
  std::ifstream said(log);
  std::string text((std::istreambuf_iterator<char>(said)), {});
  CHECK(text.find("ledger.sqlite is not usable: it is not an SQLite database") !=
        std::string::npos);
  std::ifstream kept(file);
  CHECK(std::string((std::istreambuf_iterator<char>(kept)), {}) == notes);
  // The reader refuses it the same way, and a state directory without a ledger is said so.
  auto read = usage("--state-dir " + dir.state.string());
  CHECK(read.status == 1);
  CHECK(read.out.find("not an SQLite database") != std::string::npos);
  auto none = usage("--state-dir " + (dir.dir / "nowhere").string());
  CHECK(none.status == 1);
  CHECK(none.out.find("no ledger at") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(dir.dir / "nowhere"));
}

TEST_CASE("sandgate usage: tables, CSV and bad options", "[integration][ledger]") {
  TwoTenantDir dir("ledger-cli");
  {
    GatewayProcess gw(cpu_priced(dir));
    std::string a = gw.initialize("tok-a");
    run(gw, a, "tok-a", "print('hi')", 1);
    CHECK(gw.stop(SIGTERM) == 0);
  }
  auto table = usage("--state-dir " + dir.state.string());
  CHECK(table.status == 0);
  CHECK(table.out.find("TENANT") != std::string::npos);
  CHECK(table.out.find("total: $") != std::string::npos);
  auto csv = usage("--state-dir " + dir.state.string() + " --format csv --by day");
  CHECK(csv.status == 0);
  CHECK(csv.out.rfind(
            "tenant,day,usd,cpu_seconds,gib_seconds,wall_seconds,calls,output_bytes,tool_calls\n",
            0) == 0);
  CHECK(csv.out.find("\na,20") != std::string::npos);
  // Nothing for another tenant, or before the records.
  CHECK(usage_json(dir, "--tenant b").empty());
  CHECK(usage_json(dir, "--until 2000-01-01").empty());
  CHECK(usage_json(dir, "--since 2000-01-01T00:00:00Z").size() == 1);
  for (const char* bad :
       {"--since yesterday", "--by week", "--format xml", "--colour red", "--since 2026-02-30"}) {
    auto refused = usage("--state-dir " + dir.state.string() + " " + bad);
    CHECK(refused.status == 2);
    CHECK(refused.out.find("sandgate usage:") != std::string::npos);
  }
  CHECK(usage("--help").status == 0);
}
