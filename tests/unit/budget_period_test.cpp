// The UTC calendar periods budgets count in (ledger/budget_period): days and months, their keys,
// and the UTC text of an instant.
#include "ledger/budget_period.hpp"

#include <catch2/catch.hpp>

using namespace sandgate::ledger;
using namespace std::chrono;

namespace {

Clock::time_point utc(int y, unsigned m, unsigned d, int hh = 0, int mm = 0, int ss = 0) {
  return sys_days{year{y} / month{m} / day{d}} + hours(hh) + minutes(mm) + seconds(ss);
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
