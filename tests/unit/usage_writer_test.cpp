// Usage on its way to the ledger (issue #28): the writer that saves it off the request path, and
// a sandbox's log that turns its cumulative meter into one stretch per UTC day.
#include "ledger/usage_writer.hpp"

#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <filesystem>
#include <mutex>

#include "ledger/budget_period.hpp"
#include "ledger/sqlite_ledger.hpp"
#include "session/sandbox_usage_log.hpp"

using namespace sandgate;
using namespace std::chrono;
namespace fs = std::filesystem;

namespace {

ledger::Clock::time_point utc(int y, unsigned m, unsigned d, int hh = 0, int mm = 0) {
  return sys_days{year{y} / month{m} / day{d}} + hours(hh) + minutes(mm);
}

ledger::UsageRecord stretch(const std::string& key, ledger::Clock::time_point ended, double usd) {
  ledger::UsageRecord r;
  r.stretch = key;
  r.tenant = "acme";
  r.owner = "0a1b2c3d";
  r.owner_kind = "session";
  r.started = ended - seconds(5);
  r.ended = ended;
  r.usd = usd;
  return r;
}

// A store that fails while told to, and remembers what it was given.
class FlakyStore final : public ledger::LedgerStore {
 public:
  std::atomic<bool> failing = false;
  void save(const std::vector<ledger::UsageRecord>& records) override {
    if (failing) throw ledger::LedgerError("ledger: disk I/O error");
    std::lock_guard lock(mutex);
    for (const auto& r : records) latest[r.stretch] = r;
    ++saves;
  }
  double spent(std::string_view, ledger::Clock::time_point,
               ledger::Clock::time_point) const override {
    return 0;
  }
  std::vector<ledger::UsageRow> usage(const ledger::UsageQuery&, ledger::Grouping) const override {
    return {};
  }
  std::mutex mutex;
  std::map<std::string, ledger::UsageRecord> latest;
  int saves = 0;
};

}  // namespace

TEST_CASE("the writer keeps a stretch's latest total, and keeps it through a failed save",
          "[unit][ledger]") {
  auto store = std::make_shared<FlakyStore>();
  ledger::UsageWriter writer(store, hours(1));  // saved only when asked
  auto t = utc(2026, 12, 4, 10);
  std::vector<ledger::UsageRecord> live = {stretch("gw:sb1:2026-12-04", t + seconds(2), 0.2)};
  writer.start([&] { return live; });
  // The sandbox's final total was put after a live one was collected, but arrives first: the
  // final one wins, even over a live one of a later (or the same) end.
  auto final = stretch("gw:sb1:2026-12-04", t + seconds(2), 0.3);
  final.final = true;
  writer.put(final);
  store->failing = true;
  CHECK_FALSE(writer.save_now());
  CHECK(writer.pending() == 1);
  store->failing = false;
  live.clear();
  CHECK(writer.save_now());
  CHECK(writer.pending() == 0);
  REQUIRE(store->latest.count("gw:sb1:2026-12-04") == 1);
  CHECK(store->latest["gw:sb1:2026-12-04"].usd == Approx(0.3));
  // stop() saves what was put after the last save, then the thread is gone.
  writer.put(stretch("gw:sb2:2026-12-04", t + seconds(9), 1.5));
  writer.stop();
  CHECK(store->latest["gw:sb2:2026-12-04"].usd == Approx(1.5));
}

TEST_CASE("the writer saves on its own every interval, into a real ledger file", "[unit][ledger]") {
  auto dir = fs::temp_directory_path() / ("sandgate-writer-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  {
    auto store = std::make_shared<ledger::SqliteLedger>(dir / "ledger.sqlite");
    ledger::UsageWriter writer(store, milliseconds(50));
    std::atomic<int> collected = 0;
    std::atomic<int> saved = 0;
    auto t = utc(2026, 12, 4, 10);
    writer.start(
        [&] {
          ++collected;
          return std::vector<ledger::UsageRecord>{
              stretch("gw:sb1:2026-12-04", t + seconds(collected), 0.01 * collected)};
        },
        [&](const ledger::UsageWriter::SaveOutcome& o) { saved += o.saved; });
    for (int i = 0; i < 200 && saved < 3; ++i) std::this_thread::sleep_for(milliseconds(20));
    CHECK(saved >= 3);
    writer.stop();
    ledger::SqliteLedger reader(dir / "ledger.sqlite");
    auto rows = reader.usage({}, ledger::Grouping::owner);
    REQUIRE(rows.size() == 1);  // one stretch, saved again and again: one row
    CHECK(rows[0].usd == Approx(0.01 * collected));
  }
  fs::remove_all(dir);
}

TEST_CASE("a sandbox's log: totals since its stretch began, and a new stretch each UTC day",
          "[unit][ledger]") {
  session::UsageOwner owner{"acme", "0a1b2c3d", "session", "r1"};
  auto made = utc(2026, 12, 4, 23, 59);
  session::SandboxUsageLog log(owner, "gw7:sb3", made);
  sandbox::SandboxUsage total;
  total.cpu_seconds = 2;
  total.gib_seconds = 10;
  total.usd = 0.5;
  log.count_call(100);
  auto today = log.records(total, made + seconds(30));
  REQUIRE(today.size() == 1);
  CHECK(today[0].stretch == "gw7:sb3:2026-12-04");
  CHECK(today[0].tenant == "acme");
  CHECK(today[0].replica == "r1");
  CHECK(today[0].usd == Approx(0.5));
  CHECK(today[0].calls == 1);
  CHECK(today[0].output_bytes == 100);
  CHECK(today[0].wall_seconds == Approx(30));
  // Past midnight: the day before is closed inside its day, and the new day counts from there.
  total.cpu_seconds = 3;
  total.usd = 0.8;
  log.count_call(50);
  auto across = log.records(total, utc(2026, 12, 5, 0, 1));
  REQUIRE(across.size() == 2);
  CHECK(across[0].stretch == "gw7:sb3:2026-12-04");
  CHECK(across[0].ended < utc(2026, 12, 5));
  CHECK(across[0].usd == Approx(0.8));
  CHECK(across[0].calls == 2);
  CHECK(across[1].stretch == "gw7:sb3:2026-12-05");
  CHECK(across[1].usd == Approx(0));
  CHECK(across[1].calls == 0);
  total.usd = 1.0;
  auto closing = log.final_record(total, utc(2026, 12, 5, 0, 2));
  CHECK(closing.stretch == "gw7:sb3:2026-12-05");
  CHECK(closing.usd == Approx(0.2));
  CHECK(closing.cpu_seconds == Approx(0));
  CHECK(closing.started == utc(2026, 12, 5));
}

TEST_CASE("while the store is out, what waits is bounded, and what did not fit is counted",
          "[unit][ledger]") {
  auto store = std::make_shared<FlakyStore>();
  store->failing = true;
  ledger::UsageWriter writer(store, hours(1), 3);
  auto t = utc(2026, 12, 4, 10);
  for (int i = 0; i < 5; ++i)
    writer.put(stretch("gw:sb" + std::to_string(i) + ":2026-12-04", t, 0.1));
  // A known stretch's newer total still replaces its older one.
  writer.put(stretch("gw:sb0:2026-12-04", t + seconds(1), 0.2));
  CHECK(writer.pending() == 3);
  CHECK(writer.dropped() == 2);
  CHECK_FALSE(writer.save_now());
  store->failing = false;
  CHECK(writer.save_now());
  CHECK(store->latest.size() == 3);
  CHECK(store->latest["gw:sb0:2026-12-04"].usd == Approx(0.2));
}
