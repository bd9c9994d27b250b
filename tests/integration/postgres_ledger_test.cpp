// The ledger several replicas share, on a real PostgreSQL 15 (issue #28): the schema is migrated
// once when replicas start at once, a foreign or newer schema is refused and left alone; three
// gateway replicas hammering one tenant's budget stop it within the stated bound (the budget plus
// one chunk per replica) and agree with what their calls reported; a database that goes away
// refuses tenants without a reservation, lets the others' reservations run, and is reconnected
// to by itself; `sandgate usage --ledger postgresql://…` reads it.
#include "ledger/postgres_ledger.hpp"

#include <signal.h>
#include <stdio.h>
#include <sys/wait.h>

#include <atomic>
#include <latch>
#include <thread>

#include "cpu_priced.hpp"
#include "gateway_process.hpp"
#include "postgres_cluster.hpp"
#include "temp_file.hpp"
#include "tests/support/skip.hpp"
#include "two_tenant_dir.hpp"

using namespace sandgate::test;
using namespace sandgate::ledger;
using nlohmann::json;

namespace {

// The cluster, or nullptr after reporting the skip (PostgreSQL missing here).
std::unique_ptr<PostgresCluster> cluster_or_skip() {
  if (auto why = PostgresCluster::missing()) {
    skip_test("postgres", *why);
    return nullptr;
  }
  return std::make_unique<PostgresCluster>();
}

std::string password_of(const PostgresCluster& pg) {
  std::ifstream in(pg.password_file());
  std::string line;
  std::getline(in, line);
  return line;
}

// A replica of a deployment: its own state directory, the shared ledger, CPU priced at $1 a
// second unless said otherwise, memory nearly free.
std::vector<std::string> replica_args(const TwoTenantDir& dir, const PostgresCluster& pg, int n,
                                      const std::string& chunk,
                                      const std::string& usd_per_vcpu_hour = "3600") {
  auto state = dir.dir / ("state-" + std::to_string(n));
  return {"--token-file",
          dir.tokens.string(),
          "--state-dir",
          state.string(),
          "--replica-name",
          "r" + std::to_string(n),
          "--ledger",
          pg.url(),
          "--ledger-password-file",
          pg.password_file(),
          "--budget-chunk-usd",
          chunk,
          "--price-vcpu-hour",
          usd_per_vcpu_hour,
          "--price-gib-hour",
          "0.000001",
          "--spend-cap-usd",
          "100"};
}

// What `sandgate usage` reads from the shared ledger for `tenant`.
double ledger_usd(const PostgresCluster& pg, const std::string& tenant) {
  auto c = run_sandgate("usage --ledger " + pg.url() + " --ledger-password-file " +
                        pg.password_file() + " --format json --tenant " + tenant);
  INFO(c.out);
  REQUIRE(c.status == 0);
  double usd = 0;
  for (const auto& row : json::parse(c.out)) usd += row["usd"].get<double>();
  return usd;
}

}  // namespace

TEST_CASE(
    "the PostgreSQL ledger is migrated once by replicas starting at once, and refuses "
    "what is not its own",
    "[integration][ledger][postgres]") {
  auto pg = cluster_or_skip();
  if (!pg) return;
  PostgresLedger::Options options{pg->url(), password_of(*pg)};
  // Four replicas at once: the advisory lock lets one migrate; the others find it done.
  std::atomic<int> opened{0};
  std::vector<std::string> errors(4);
  {
    std::latch together(4);
    std::vector<std::thread> starts;
    for (int i = 0; i < 4; ++i)
      starts.emplace_back([&, i] {
        together.arrive_and_wait();
        try {
          PostgresLedger ledger(options);
          ++opened;
        } catch (const std::exception& e) {
          errors[static_cast<std::size_t>(i)] = e.what();
        }
      });
    for (auto& t : starts) t.join();
  }
  for (const auto& e : errors) CHECK(e.empty());
  CHECK(opened == 4);
  CHECK(pg->psql("SELECT count(*), max(version) FROM sandgate_schema") ==
        "1|" + std::to_string(kPostgresSchemaVersion) + "\n");

  PostgresLedger ledger(options);
  // Records: a stretch's later totals replace its earlier ones.
  const auto now = Clock::now();
  UsageRecord r{"inst-1-day", "acme", "abcd1234", "session", "r0", now - std::chrono::minutes(1),
                now};
  r.usd = 0.25;
  r.calls = 2;
  ledger.save({r});
  r.usd = 0.5;
  r.calls = 3;
  ledger.save({r});
  CHECK(ledger.spent("acme", now - std::chrono::hours(1), now + std::chrono::hours(1)) == 0.5);
  auto rows = ledger.usage({}, Grouping::owner);
  REQUIRE(rows.size() == 1);
  CHECK(rows[0].group == "session:abcd1234");
  CHECK(rows[0].calls == 3);
  CHECK(rows[0].tool_calls == 0);
  // Tool calls by upstream (code mode): per stretch, the latest replacing the last.
  r.tool_use = {{"tickets", {2, 0.02}}, {"search", {1, 0}}};
  ledger.save({r});
  r.tool_use["tickets"] = {4, 0.04};
  ledger.save({r});
  auto by_upstream = ledger.usage({}, Grouping::upstream);
  REQUIRE(by_upstream.size() == 2);
  CHECK(by_upstream[0].group == "search");
  CHECK(by_upstream[1].group == "tickets");
  CHECK(by_upstream[1].tool_calls == 4);
  CHECK(by_upstream[1].usd == Approx(0.04));
  CHECK(ledger.usage({}, Grouping::tenant).at(0).tool_calls == 5);
  // A schema 1 database (a sandgate before code mode): read as it is, migrated by a gateway.
  pg->psql("DROP TABLE sandgate_tool_use; UPDATE sandgate_schema SET version = 1");
  {
    auto reading = options;
    reading.access = PostgresLedger::Access::read_only;
    PostgresLedger reader(reading);
    CHECK(reader.usage({}, Grouping::tenant).at(0).tool_calls == 0);
    CHECK(reader.usage({}, Grouping::upstream).empty());
  }
  { PostgresLedger migrated(options); }
  CHECK(pg->psql("SELECT max(version) FROM sandgate_schema") ==
        std::to_string(kPostgresSchemaVersion) + "\n");
  CHECK(ledger.usage({}, Grouping::upstream).empty());  // the old stretch's calls went with it

  // Reservations from many threads at once never pass the budget (a period's claims start at
  // nothing: each replica claims what its own sandboxes use).
  const Period day = period_of(PeriodKind::day, now);
  std::atomic<double> granted{0};
  {
    std::vector<std::thread> replicas;
    for (int i = 0; i < 6; ++i)
      replicas.emplace_back([&] {
        PostgresLedger own(options);
        for (int k = 0; k < 30; ++k) {
          double g = own.reserve("acme", day, 0.03, 2.0).granted;
          for (double seen = granted.load(); !granted.compare_exchange_weak(seen, seen + g);) {
          }
        }
      });
    for (auto& t : replicas) t.join();
  }
  CHECK(granted.load() == Approx(2.0).margin(1e-9));
  CHECK(ledger.reserve("acme", day, 0.03, 2.0).granted == 0);
  // Given back, it can be reserved again.
  CHECK(ledger.settle("acme", day, -0.2) == Approx(1.8).margin(1e-9));
  CHECK(ledger.reserve("acme", day, 1.0, 2.0).granted == Approx(0.2).margin(1e-9));

  // A URL with a password is refused before anything connects; a reader of a database holding
  // no ledger, a database with sandgate_* tables of another making, and a newer schema are
  // refused and left as they were.
  CHECK_THROWS_WITH(PostgresLedger({"postgresql://sandgate:secret@127.0.0.1:1/postgres", ""}),
                    Catch::Contains("--ledger-password-file"));
  pg->psql("CREATE DATABASE empty; CREATE DATABASE foreign_db; CREATE DATABASE newer;");
  auto url_of = [&](const std::string& db) {
    return "postgresql://sandgate@127.0.0.1:" + std::to_string(pg->port()) + "/" + db;
  };
  CHECK_THROWS_WITH(
      PostgresLedger({url_of("empty"), password_of(*pg), PostgresLedger::Access::read_only}),
      Catch::Contains("holds no sandgate ledger"));
  pg->psql(
      "\\c foreign_db\nCREATE TABLE sandgate_usage (x integer); INSERT INTO sandgate_usage "
      "VALUES (7);");
  CHECK_THROWS_WITH(PostgresLedger({url_of("foreign_db"), password_of(*pg)}),
                    Catch::Contains("not ours"));
  CHECK(pg->psql("\\c foreign_db\nSELECT x FROM sandgate_usage") == "7\n");
  { PostgresLedger fresh({url_of("newer"), password_of(*pg)}); }
  pg->psql("\\c newer\nUPDATE sandgate_schema SET version = 99");
  CHECK_THROWS_WITH(PostgresLedger({url_of("newer"), password_of(*pg)}),
                    Catch::Contains("newer sandgate"));
  // A wrong password: the message says the database refused, and shows no password.
  try {
    PostgresLedger wrong({pg->url(), "not-the-password"});
    FAIL("a wrong password was let in");
  } catch (const LedgerError& e) {
    std::string said = e.what();
    CHECK(said.find("password authentication failed") != std::string::npos);
    CHECK(said.find("not-the-password") == std::string::npos);
  }
}

TEST_CASE("three replicas sharing a PostgreSQL ledger stop a tenant within its budget",
          "[integration][ledger][budget][postgres]") {
  auto pg = cluster_or_skip();
  if (!pg) return;
  // CPU at $0.50 a second: six burners share this machine's cores (two here), so a replica's
  // sandboxes use at most about $0.35 in the two seconds before their use is seen — under a
  // chunk, the regime the bound is stated for (docs/operations.md, "Across replicas").
  constexpr double kBudget = 6.0, kChunk = 1.0;
  constexpr int kReplicas = 3, kSessionsEach = 2;
  TwoTenantDir dir("pg-budget", "budget_usd_per_day=6");
  std::vector<std::unique_ptr<GatewayProcess>> replicas;
  for (int n = 0; n < kReplicas; ++n)
    replicas.push_back(std::make_unique<GatewayProcess>(replica_args(dir, *pg, n, "1", "1800")));
  // Two sessions of tenant a on each replica burn CPU until the budget stops them.
  struct Burner {
    GatewayProcess* gw;
    std::string session;
    double reported = 0;  // the session's spend as its last result said
    std::string ended;    // the tool error that stopped it
    int calls = 0;
  };
  std::vector<Burner> burners;
  for (auto& gw : replicas)
    for (int s = 0; s < kSessionsEach; ++s) {
      Burner b;
      b.gw = gw.get();
      b.session = gw->initialize("tok-a");
      burners.push_back(b);
    }
  {
    std::vector<std::thread> threads;
    for (auto& b : burners)
      threads.emplace_back([&b] {
        for (int id = 1; id <= 60 && b.ended.empty(); ++id) {
          auto r = b.gw->post(
              tool_call_message(id, "execute", execute_arguments(cpu_burn(0.3), "python", 60)),
              b.session, "tok-a");
          if (r.status != 200) {
            b.ended = "HTTP " + std::to_string(r.status);
            break;
          }
          auto result = r.json_body()["result"];
          ++b.calls;
          if (result["isError"] == true)
            b.ended = tool_text(result);
          else
            b.reported = result["structuredContent"]["spend_usd"].get<double>();
        }
      });
    for (auto& t : threads) t.join();
  }
  double reported = 0;
  for (const auto& b : burners) {
    INFO("calls " << b.calls << ": " << b.ended);
    CHECK(b.ended.find("his tenant's daily budget of $6.00 is spent") != std::string::npos);
    reported += b.reported;
  }
  // Every replica refuses the tenant now — a new session too — and runs the other one.
  for (auto& gw : replicas) {
    std::string fresh = gw->initialize("tok-a");
    auto r = gw->post(tool_call_message(1, "execute", execute_arguments("print(1)", "python", 30)),
                      fresh, "tok-a");
    REQUIRE(r.status == 200);
    CHECK(tool_text(r.json_body()["result"]).find("daily budget of $6.00 is spent") !=
          std::string::npos);
  }
  std::string b = replicas[1]->initialize("tok-b");
  auto other = replicas[1]->post(
      tool_call_message(2, "execute", execute_arguments("print('b runs')", "python", 30)), b,
      "tok-b");
  CHECK(other.json_body()["result"]["isError"] == false);
  // Spend per tenant on /metrics, under the names the tokens file gave them.
  CHECK(eventually([&] {
    auto metrics = replicas[1]->request(http::verb::get, "/metrics").body;
    return metrics.find("sandgate_tenant_spend_usd_total{tenant=\"a\"}") != std::string::npos &&
           metrics.find("sandgate_tenant_spend_usd_total{tenant=\"b\"}") != std::string::npos;
  }));
  for (auto& gw : replicas) CHECK(gw->stop(SIGTERM) == 0);
  // The ledger holds what the calls reported (plus the stopped calls' last moments and the
  // sandboxes' teardown), and the tenant's spend stays within the budget plus a chunk per
  // replica.
  double recorded = ledger_usd(*pg, "a");
  INFO("reported " << reported << ", recorded " << recorded);
  CHECK(recorded >= reported - 1e-6 * static_cast<double>(burners.size()));
  // ... and no more than that: beyond the reported spend, each session's stopped last call
  // (0.3 CPU-seconds at most, $0.15) and its sandbox's teardown. A ledger counting some use
  // twice fails here (issue #41: the bound below alone let a 1.4x double count pass).
  CHECK(recorded <= reported + 0.25 * static_cast<double>(burners.size()));
  CHECK(recorded <= kBudget + kReplicas * kChunk);
  // Replicas stop a tenant while they still hold a few seconds of its pace (its use is seen a
  // second or two late): near the budget, short of it rather than past it.
  CHECK(recorded >= kBudget / 2);
  // At shutdown each replica gave back what it had reserved and not used: the claims are what
  // was spent, not what was reserved.
  double claimed = std::stod(pg->psql(
      "SELECT claimed_usd FROM sandgate_budget_claims WHERE tenant = 'a' AND period_kind = 'day'"));
  CHECK(claimed <= recorded + 1e-6);
  CHECK(claimed >= recorded - kReplicas * 0.05);
}

TEST_CASE(
    "a PostgreSQL ledger that goes away refuses only tenants without a reservation, and "
    "is reconnected to",
    "[integration][ledger][budget][postgres]") {
  auto pg = cluster_or_skip();
  if (!pg) return;
  // Both tenants have a budget ($10 a day); a replica reserves $5 at a time.
  TwoTenantDir dir("pg-down");
  auto args = replica_args(dir, *pg, 0, "5");
  args.insert(args.end(), {"--budget-usd-per-day", "10", "--log-level", "debug"});
  // Its log, scanned at the end: the ledger it opened is named, its password never.
  TempFile log("pg-down-gateway.log");
  GatewayProcess gw(args, {}, false, {EXEC_WITH_BINARY, "--stderr", log.path.string(), "--"});
  std::string a = gw.initialize("tok-a");
  std::string b = gw.initialize("tok-b");
  auto call = [&](const std::string& session, const std::string& token, int id) {
    auto r =
        gw.post(tool_call_message(id, "execute", execute_arguments(cpu_burn(0.2), "python", 30)),
                session, token);
    REQUIRE(r.status == 200);
    return r.json_body()["result"];
  };
  REQUIRE(call(a, "tok-a", 1)["isError"] == false);  // a holds a reservation now
  pg->stop();
  // Within its reservation a runs on (its use is saved once the database is back).
  auto ran = call(a, "tok-a", 2);
  CHECK(ran["isError"] == false);
  const double a_reported = ran["structuredContent"].value("spend_usd", 0.0);
  CHECK(a_reported >= 0.35);
  // b has none: refused with an error the model can act on, no sandbox started (fail closed).
  auto refused = call(b, "tok-b", 3);
  CHECK(refused["isError"] == true);
  CHECK(tool_text(refused).find("cannot read this tenant's budget right now; try again") !=
        std::string::npos);
  // A replica cannot start without its ledger; the message says why, without the password.
  {
    std::string line;
    for (const auto& arg : replica_args(dir, *pg, 1, "5")) line += " '" + arg + "'";
    auto c = run_sandgate("--listen 127.0.0.1:0" + line);
    CHECK(c.status != 0);
    CHECK(c.out.find("cannot connect to the ledger database") != std::string::npos);
    CHECK(c.out.find(password_of(*pg)) == std::string::npos);
  }
  pg->start();
  // Reconnected by itself: b's call runs, and what a used meanwhile reaches the ledger.
  CHECK(eventually([&] { return call(b, "tok-b", 4)["isError"] == false; }));
  CHECK(gw.stop(SIGTERM) == 0);
  // Nothing used during the outage is missing from the ledger.
  CHECK(ledger_usd(*pg, "a") >= a_reported - 1e-6);
  CHECK(ledger_usd(*pg, "b") > 0);
  std::string logged = log.read();
  INFO(logged);
  REQUIRE(logged.find("ledger_opened") != std::string::npos);
  CHECK(logged.find(password_of(*pg)) == std::string::npos);
}
