// Usage on its way to the ledger (issue #28): the writer that saves it off the request path
// (ledger/usage_writer).
#include "ledger/usage_writer.hpp"

#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <filesystem>
#include <mutex>

#include "ledger/budget_period.hpp"
#include "ledger/sqlite_ledger.hpp"

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
