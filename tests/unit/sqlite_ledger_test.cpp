// The embedded SQLite store of the ledger (ledger/sqlite_ledger, issue #28): records kept across
// a reopen, spend per tenant and period, totals by day and by owner, and files that are not a
// sandgate ledger refused, never replaced.
#include "ledger/sqlite_ledger.hpp"

#include <sqlite3.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <future>
#include <iterator>

#include "ledger/budget_period.hpp"

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
  r.stretch = tenant + "/" + owner + "/" + utc_text(ended);
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

TEST_CASE("the SQLite ledger keeps what it was given, across a reopen", "[unit][ledger]") {
  TempDir dir;
  auto file = dir.path / "ledger.sqlite";
  {
    SqliteLedger ledger(file);
    ledger.save({record("acme", utc(2026, 12, 3, 23, 0), 0.25),
                 record("acme", utc(2026, 12, 4, 1, 0), 0.5, "99887766"),
                 record("beta", utc(2026, 12, 4, 2, 0), 2.0)});
    ledger.save({});
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

TEST_CASE("a stretch saved again holds its latest totals, not a second row", "[unit][ledger]") {
  TempDir dir;
  SqliteLedger ledger(dir.path / "ledger.sqlite");
  auto first = record("acme", utc(2026, 12, 4, 1), 0.1);
  first.stretch = "gw1:7:2026-12-04";
  ledger.save({first});
  auto later = first;
  later.ended = first.ended + seconds(30);
  later.usd = 0.4;
  later.calls = 3;
  auto other = record("acme", utc(2026, 12, 4, 2), 1.0);
  other.stretch = "gw1:8:2026-12-04";
  ledger.save({later, other});
  auto day = period_of(PeriodKind::day, first.ended);
  CHECK(ledger.spent("acme", day.start, day.end) == Approx(1.4));
  auto rows = ledger.usage({}, Grouping::tenant);
  REQUIRE(rows.size() == 1);
  CHECK(rows[0].calls == 4);
  // Ended is the stretch's latest end: it moved with the totals.
  UsageQuery late;
  late.since = first.ended + seconds(1);
  CHECK(ledger.usage(late, Grouping::tenant).at(0).usd == Approx(1.4));
}

TEST_CASE("a file that is not a sandgate ledger is refused, and left as it was", "[unit][ledger]") {
  TempDir dir;
  // Refused, and not touched at all: the same bytes, and no -wal or -shm file beside it.
  auto refused_untouched = [](const fs::path& file, const std::string& why) {
    auto bytes = [&] {
      std::ifstream in(file, std::ios::binary);
      return std::string((std::istreambuf_iterator<char>(in)), {});
    };
    std::string before = bytes();
    CHECK_THROWS_WITH(SqliteLedger(file), Catch::Contains(why));
    CHECK(bytes() == before);
    CHECK_FALSE(fs::exists(file.string() + "-wal"));
    CHECK_FALSE(fs::exists(file.string() + "-shm"));
  };
  auto make_database = [](const fs::path& file, const char* sql) {
    sqlite3* db = nullptr;
    REQUIRE(sqlite3_open(file.c_str(), &db) == SQLITE_OK);
    REQUIRE(sqlite3_exec(db, sql, nullptr, nullptr, nullptr) == SQLITE_OK);
    sqlite3_close(db);
  };
  SECTION("a text file") {
    auto file = dir.path / "notes.txt";
    std::ofstream(file) << "not a database, but someone's notes, long enough to have a header "
                           "of a hundred bytes if it were one, which it is not.\n";
    refused_untouched(file, "not an SQLite database");
  }
  SECTION("another program's SQLite database, with tables or without") {
    auto file = dir.path / "other.sqlite";
    make_database(file, "CREATE TABLE mine (x); INSERT INTO mine VALUES (42);");
    refused_untouched(file, "another program's SQLite database");
    auto empty = dir.path / "empty.sqlite";
    make_database(empty, "PRAGMA user_version=7");
    refused_untouched(empty, "another program's SQLite database");
  }
  SECTION("a ledger of a newer schema") {
    auto file = dir.path / "ledger.sqlite";
    { SqliteLedger ledger(file); }
    make_database(file, "PRAGMA user_version=99");
    refused_untouched(file, "newer sandgate");
  }
}

TEST_CASE("a new ledger is recognised by a second opener while the first still writes",
          "[unit][ledger]") {
  TempDir dir;
  auto file = dir.path / "ledger.sqlite";
  SqliteLedger writer(file);
  writer.save({record("acme", utc(2026, 12, 4, 1), 1.0)});
  // What `sandgate usage` does beside a running gateway: the header already says whose it is.
  SqliteLedger reader(file);
  CHECK(reader.usage({}, Grouping::tenant).at(0).usd == Approx(1.0));
  writer.save({record("acme", utc(2026, 12, 4, 2), 0.5)});
  CHECK(reader.usage({}, Grouping::tenant).at(0).usd == Approx(1.5));
}

TEST_CASE("two openers of a new ledger at once both get the one schema", "[unit][ledger]") {
  TempDir dir;
  auto file = dir.path / "ledger.sqlite";
  auto open_and_write = [&](const std::string& tenant) {
    SqliteLedger ledger(file);
    ledger.save({record(tenant, utc(2026, 12, 4, 1), 1.0)});
  };
  auto a = std::async(std::launch::async, open_and_write, "a");
  auto b = std::async(std::launch::async, open_and_write, "b");
  CHECK_NOTHROW(a.get());
  CHECK_NOTHROW(b.get());
  SqliteLedger ledger(file);
  CHECK(ledger.usage({}, Grouping::tenant).size() == 2);
}

TEST_CASE("tool calls by upstream: kept per stretch, replaced when saved again, summed by tenant",
          "[unit][ledger][upstream]") {
  TempDir dir;
  SqliteLedger ledger(dir.path / "ledger.sqlite");
  auto a = record("acme", utc(2026, 12, 4, 1), 0.5);
  a.tool_use = {{"tickets", {2, 0.02}}, {"search", {1, 0}}};
  auto b = record("acme", utc(2026, 12, 4, 2), 0.5, "99887766");
  b.tool_use = {{"tickets", {1, 0.01}}};
  auto c = record("beta", utc(2026, 12, 4, 3), 1.0);
  ledger.save({a, b, c});
  a.tool_use["tickets"] = {5, 0.05};  // the same stretch's later totals
  ledger.save({a});
  auto by_upstream = ledger.usage({}, Grouping::upstream);
  REQUIRE(by_upstream.size() == 2);
  CHECK(by_upstream[0].tenant == "acme");
  CHECK(by_upstream[0].group == "search");
  CHECK(by_upstream[0].tool_calls == 1);
  CHECK(by_upstream[1].group == "tickets");
  CHECK(by_upstream[1].tool_calls == 6);
  CHECK(by_upstream[1].usd == Approx(0.06));
  auto totals = ledger.usage({}, Grouping::tenant);
  REQUIRE(totals.size() == 2);
  CHECK(totals[0].tool_calls == 7);
  CHECK(totals[0].calls == 2);  // execute calls, unchanged by the join
  CHECK(totals[1].tool_calls == 0);
  UsageQuery later;
  later.since = utc(2026, 12, 4, 2);
  auto since = ledger.usage(later, Grouping::upstream);
  REQUIRE(since.size() == 1);
  CHECK(since[0].tool_calls == 1);
  // The in-memory ledger forgets a stretch's tool calls with the stretch.
  ledger.forget_before(utc(2026, 12, 4, 2));
  CHECK(ledger.usage({}, Grouping::upstream).at(0).tool_calls == 1);
}

TEST_CASE("a schema 1 ledger is read as it is, and migrated forward by the gateway that opens it",
          "[unit][ledger][upstream]") {
  TempDir dir;
  auto file = dir.path / "ledger.sqlite";
  {
    // What a sandgate before code mode wrote: the usage table alone, user_version 1.
    SqliteLedger fresh(file);
    fresh.save({record("acme", utc(2026, 12, 4, 1), 0.5)});
    sqlite3* db = nullptr;
    REQUIRE(sqlite3_open(file.c_str(), &db) == SQLITE_OK);
    REQUIRE(sqlite3_exec(db, "DROP TABLE tool_use; PRAGMA user_version=1", nullptr, nullptr,
                         nullptr) == SQLITE_OK);
    sqlite3_close(db);
  }
  {
    SqliteLedger reader(file, SqliteLedger::Access::read_only);
    CHECK(reader.usage({}, Grouping::tenant).at(0).tool_calls == 0);
    CHECK(reader.usage({}, Grouping::upstream).empty());
  }
  SqliteLedger ledger(file);
  auto later = record("acme", utc(2026, 12, 4, 2), 0.5, "99887766");
  later.tool_use = {{"tickets", {3, 0}}};
  ledger.save({later});
  auto totals = ledger.usage({}, Grouping::tenant);
  CHECK(totals.at(0).usd == Approx(1.0));
  CHECK(totals.at(0).tool_calls == 3);
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open(file.c_str(), &db) == SQLITE_OK);
  sqlite3_stmt* version = nullptr;
  REQUIRE(sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &version, nullptr) == SQLITE_OK);
  REQUIRE(sqlite3_step(version) == SQLITE_ROW);
  CHECK(sqlite3_column_int(version, 0) == kSchemaVersion);
  sqlite3_finalize(version);
  sqlite3_close(db);
}
