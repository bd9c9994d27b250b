#include "ledger/stretch_growth.hpp"

namespace sandgate::ledger {

std::optional<double> StretchGrowth::add(const UsageRecord& record, const Period& today) {
  auto seen = seen_.find(record.stretch);
  if (seen == seen_.end()) {
    if (record.started < today.start - std::chrono::days(1)) return std::nullopt;
    // Kept after a final record too: the same final record may come again.
    seen = seen_.emplace(record.stretch, Seen{0, period_of(PeriodKind::day, record.started).start})
               .first;
  }
  double added = record.usd - seen->second.usd;
  if (added > 0) seen->second.usd = record.usd;
  return added;
}

void StretchGrowth::forget_old(const Period& today) {
  // Stretches of days before yesterday get no more records but late final ones, which the
  // store answers for.
  if (today.start == forgot_at_) return;
  forgot_at_ = today.start;
  for (auto it = seen_.begin(); it != seen_.end();)
    it =
        it->second.day_start < today.start - std::chrono::days(1) ? seen_.erase(it) : std::next(it);
}

}  // namespace sandgate::ledger
