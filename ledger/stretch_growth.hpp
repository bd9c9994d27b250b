#pragma once
// What each saved record adds to its tenant's spend. A stretch's totals are saved again and
// again (the latest replaces the last), and a sandbox's final record may come twice (collected
// once it ended, then put when its session lets go of it), so what a record adds is the
// difference from what was last seen of its stretch. Stretches of days before yesterday are
// forgotten: at most two days' sandboxes are remembered.
#include <optional>
#include <string>
#include <unordered_map>

#include "ledger/budget_period.hpp"
#include "ledger/usage_record.hpp"

namespace sandgate::ledger {

class StretchGrowth {
 public:
  // What `record` adds (≤ 0: nothing new), saved on `today`; nullopt when its stretch is of a
  // day no longer remembered (a session let go of a sandbox long after it ended): the store holds
  // its totals.
  std::optional<double> add(const UsageRecord& record, const Period& today);
  // Forgets stretches of days before yesterday, once a day.
  void forget_old(const Period& today);
  std::size_t size() const { return seen_.size(); }

 private:
  struct Seen {
    double usd = 0;
    Clock::time_point day_start;
  };
  std::unordered_map<std::string, Seen> seen_;
  Clock::time_point forgot_at_;
};

}  // namespace sandgate::ledger
