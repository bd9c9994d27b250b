#pragma once
// A tenant budget's period: a calendar day or month in UTC (never the host's zone, never a
// rolling window), so that every replica, and an operator reading `sandgate usage`, agree on
// which period a charge falls in and when a budget resets.
#include <chrono>
#include <string>

namespace sandgate::ledger {

using Clock = std::chrono::system_clock;

enum class PeriodKind { day, month };

struct Period {
  PeriodKind kind;
  Clock::time_point start;  // 00:00:00 UTC of the day, or of the month's first day
  Clock::time_point end;    // the next period's start: the budget resets then
};

Period period_of(PeriodKind kind, Clock::time_point at);
// "2026-12-04" for a day, "2026-12" for a month: the key a period is stored under.
std::string period_key(const Period& period);
// "2026-12-05T00:00:00Z": when a spent budget is available again, as the model is told.
std::string utc_text(Clock::time_point at);

}  // namespace sandgate::ledger
