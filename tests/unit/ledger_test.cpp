// The ledger's first parts, on their own (issue #28): the UTC calendar periods budgets count
// in, and the embedded SQLite store — records kept across a reopen, spend per tenant and
// period, totals by day and by owner, and files that are not a sandgate ledger refused, never
// replaced.
#include <sqlite3.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "ledger/budget_period.hpp"
#include "ledger/sqlite_ledger.hpp"

using namespace sandgate::ledger;
namespace fs = std::filesystem;
using namespace std::chrono;

namespace {

Clock::time_point utc(int y, unsigned m, unsigned d, int hh = 0, int mm = 0, int ss = 0) {
  return sys_days{year{y} / month{m} / day{d}} + hours(hh) + minutes(mm) + seconds(ss);
}

struct TempDir {
  fs::path path = fs::temp_directory_path() /
                  ("sandgate-ledger-" + std::to_string(::getpid()) + "-" + std::to_string(++count));
  TempDir() { fs::create_directories(path); }
  ~TempDir() { fs::remove_all(path); }
  static inline int count = 0;
};

UsageRecord record(const std::string& tenant, Clock::time_point ended, double usd,
                   const std::string& owner = "0a1b2c3d") {
  UsageRecord r;
  r.tenant = tenant;
  r.owner = owner;
  r.owner_kind = "session";
  r.started = ended - seconds(10);
  r.ended = ended;
  r.cpu_seconds = 1.5;
  r.gib_seconds = 2.5;
  r.wall_seconds = 10;
  r.calls = 1;
  r.output_bytes = 100;
  r.usd_per_vcpu_hour = 0.0504;
  r.usd_per_gib_hour = 0.0162;
  r.usd = usd;
  return r;
}

}  // namespace

TEST_CASE("budget periods are UTC calendar days and months", "[unit][ledger]") {
  auto at = utc(2026, 12, 31, 23, 59, 59);
  auto day = period_of(PeriodKind::day, at);
  CHECK(day.start == utc(2026, 12, 31));
  CHECK(day.end == utc(2027, 1, 1));
  CHECK(period_key(day) == "2026-12-31");
  auto month = period_of(PeriodKind::month, at);
  CHECK(month.start == utc(2026, 12, 1));
  CHECK(month.end == utc(2027, 1, 1));
  CHECK(period_key(month) == "2026-12");
  // February of a leap year, and the first instant of a period belongs to it.
  auto feb = period_of(PeriodKind::month, utc(2028, 2, 1));
  CHECK(feb.start == utc(2028, 2, 1));
  CHECK(feb.end == utc(2028, 3, 1));
  CHECK(period_of(PeriodKind::day, utc(2028, 2, 29)).end == utc(2028, 3, 1));
  CHECK(utc_text(utc(2027, 1, 1)) == "2027-01-01T00:00:00Z");
  CHECK(utc_text(utc(2026, 3, 7, 4, 5, 6) + milliseconds(999)) == "2026-03-07T04:05:06Z");
}

TEST_CASE("the SQLite ledger keeps what it was given, across a reopen", "[unit][ledger]") {
  TempDir dir;
  auto file = dir.path / "ledger.sqlite";
  {
    SqliteLedger ledger(file);
    ledger.append({record("acme", utc(2026, 12, 3, 23, 0), 0.25),
                   record("acme", utc(2026, 12, 4, 1, 0), 0.5, "99887766"),
                   record("beta", utc(2026, 12, 4, 2, 0), 2.0)});
    ledger.append({});
  }
  SqliteLedger ledger(file);
  auto today = period_of(PeriodKind::day, utc(2026, 12, 4, 12));
  auto month = period_of(PeriodKind::month, utc(2026, 12, 4, 12));
  CHECK(ledger.spent("acme", today.start, today.end) == Approx(0.5));
  CHECK(ledger.spent("acme", month.start, month.end) == Approx(0.75));
  CHECK(ledger.spent("beta", month.start, month.end) == Approx(2.0));
  CHECK(ledger.spent("nobody", month.start, month.end) == 0);
  // A name that looks like SQL is a name.
  CHECK(ledger.spent("acme' OR '1'='1", month.start, month.end) == 0);

  UsageQuery acme;
  acme.tenant = "acme";
  auto by_day = ledger.usage(acme, Grouping::day);
  REQUIRE(by_day.size() == 2);
  CHECK(by_day[0].group == "2026-12-03");
  CHECK(by_day[0].usd == Approx(0.25));
  CHECK(by_day[1].group == "2026-12-04");
  CHECK(by_day[1].calls == 1);
  CHECK(by_day[1].output_bytes == 100);
  UsageQuery since;
  since.since = utc(2026, 12, 4);
  auto by_owner = ledger.usage(since, Grouping::owner);
  REQUIRE(by_owner.size() == 2);
  CHECK(by_owner[0].tenant == "acme");
  CHECK(by_owner[0].group == "session:99887766");
  CHECK(by_owner[1].tenant == "beta");
  UsageQuery until;
  until.until = utc(2026, 12, 4);
  auto totals = ledger.usage(until, Grouping::tenant);
  REQUIRE(totals.size() == 1);
  CHECK(totals[0].usd == Approx(0.25));
  CHECK(totals[0].cpu_seconds == Approx(1.5));
}

TEST_CASE("a file that is not a sandgate ledger is refused, and left as it was", "[unit][ledger]") {
  TempDir dir;
  SECTION("a text file") {
    auto file = dir.path / "notes.txt";
    std::ofstream(file) << "not a database, but someone's notes\n";
    CHECK_THROWS_WITH(SqliteLedger(file), Catch::Contains("not usable"));
    std::ifstream in(file);
    std::string first;
    std::getline(in, first);
    CHECK(first == "not a database, but someone's notes");
  }
  SECTION("another program's SQLite database") {
    auto file = dir.path / "other.sqlite";
    sqlite3* db = nullptr;
    REQUIRE(sqlite3_open(file.c_str(), &db) == SQLITE_OK);
    REQUIRE(sqlite3_exec(db, "CREATE TABLE mine (x); INSERT INTO mine VALUES (42);", nullptr,
                         nullptr, nullptr) == SQLITE_OK);
    sqlite3_close(db);
    CHECK_THROWS_WITH(SqliteLedger(file), Catch::Contains("another program's SQLite database"));
    REQUIRE(sqlite3_open(file.c_str(), &db) == SQLITE_OK);
    CHECK(sqlite3_exec(db, "SELECT x FROM mine", nullptr, nullptr, nullptr) == SQLITE_OK);
    sqlite3_close(db);
  }
  SECTION("a ledger of a newer schema") {
    auto file = dir.path / "ledger.sqlite";
    { SqliteLedger ledger(file); }
    sqlite3* db = nullptr;
    REQUIRE(sqlite3_open(file.c_str(), &db) == SQLITE_OK);
    REQUIRE(sqlite3_exec(db, "PRAGMA user_version=99", nullptr, nullptr, nullptr) == SQLITE_OK);
    sqlite3_close(db);
    CHECK_THROWS_WITH(SqliteLedger(file), Catch::Contains("newer sandgate"));
  }
}
