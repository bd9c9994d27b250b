#include "ledger/budget_period.hpp"

#include <cstdio>

namespace sandgate::ledger {
namespace chrono = std::chrono;

Period period_of(PeriodKind kind, Clock::time_point at) {
  auto day = chrono::floor<chrono::days>(at);
  if (kind == PeriodKind::day) return {kind, day, day + chrono::days(1)};
  chrono::year_month_day date{day};
  chrono::year_month first = date.year() / date.month();
  auto start = chrono::sys_days{first / chrono::day(1)};
  auto end = chrono::sys_days{(first + chrono::months(1)) / chrono::day(1)};
  return {kind, start, end};
}

std::string period_key(const Period& period) {
  chrono::year_month_day date{chrono::floor<chrono::days>(period.start)};
  char text[16];
  if (period.kind == PeriodKind::day)
    std::snprintf(text, sizeof text, "%04d-%02u-%02u", static_cast<int>(date.year()),
                  static_cast<unsigned>(date.month()), static_cast<unsigned>(date.day()));
  else
    std::snprintf(text, sizeof text, "%04d-%02u", static_cast<int>(date.year()),
                  static_cast<unsigned>(date.month()));
  return text;
}

std::string utc_text(Clock::time_point at) {
  auto day = chrono::floor<chrono::days>(at);
  chrono::year_month_day date{day};
  chrono::hh_mm_ss time{chrono::floor<chrono::seconds>(at - day)};
  char text[32];
  std::snprintf(text, sizeof text, "%04d-%02u-%02uT%02d:%02d:%02dZ", static_cast<int>(date.year()),
                static_cast<unsigned>(date.month()), static_cast<unsigned>(date.day()),
                static_cast<int>(time.hours().count()), static_cast<int>(time.minutes().count()),
                static_cast<int>(time.seconds().count()));
  return text;
}

}  // namespace sandgate::ledger
