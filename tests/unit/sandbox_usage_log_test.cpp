// A sandbox's usage on its way to the ledger (session/sandbox_usage_log): its cumulative meter
// turned into one stretch per UTC day.
#include "session/sandbox_usage_log.hpp"

#include <catch2/catch.hpp>

#include "ledger/budget_period.hpp"

using namespace sandgate;
using namespace std::chrono;

namespace {

ledger::Clock::time_point utc(int y, unsigned m, unsigned d, int hh = 0, int mm = 0) {
  return sys_days{year{y} / month{m} / day{d}} + hours(hh) + minutes(mm);
}

}  // namespace

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

TEST_CASE("a sandbox's calls to upstream MCP servers go to its stretch, by upstream and by day",
          "[unit][ledger][upstream]") {
  session::UsageOwner owner{"acme", "0a1b2c3d", "session", ""};
  auto made = utc(2026, 12, 4, 23, 59);
  session::SandboxUsageLog log(owner, "gw7:sb3", made);
  sandbox::SandboxUsage total;
  auto tally = log.tool_use();
  // Told by the tool channel on its own thread, as calls end.
  tally->add("tickets", 0.01);
  tally->add("tickets", 0.01);
  tally->add("search", 0);
  auto today = log.records(total, made + seconds(30));
  REQUIRE(today.size() == 1);
  REQUIRE(today[0].tool_use.size() == 2);
  CHECK(today[0].tool_use.at("tickets").calls == 2);
  CHECK(today[0].tool_use.at("tickets").usd == Approx(0.02));
  CHECK(today[0].tool_use.at("search").calls == 1);
  // Past midnight: the day before keeps its calls; the new day has only those made since.
  tally->add("tickets", 0.01);
  auto across = log.records(total, utc(2026, 12, 5, 0, 1));
  REQUIRE(across.size() == 2);
  CHECK(across[0].tool_use.at("tickets").calls == 3);
  CHECK(across[1].tool_use.empty());
  tally->add("search", 0);
  auto closing = log.final_record(total, utc(2026, 12, 5, 0, 2));
  REQUIRE(closing.tool_use.size() == 1);
  CHECK(closing.tool_use.at("search").calls == 1);
}
