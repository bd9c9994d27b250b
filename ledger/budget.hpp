#pragma once
// A tenant's budgets over UTC calendar periods, in USD (issue #28): what its tenant terms say,
// handed to the budgets with each call (ledger/budgets.hpp).
#include <optional>

#include "ledger/budget_period.hpp"

namespace sandgate::ledger {

struct Budget {
  std::optional<double> usd_per_day;
  std::optional<double> usd_per_month;
  bool any() const { return usd_per_day.has_value() || usd_per_month.has_value(); }
  std::optional<double> of(PeriodKind kind) const {
    return kind == PeriodKind::day ? usd_per_day : usd_per_month;
  }
  bool operator==(const Budget&) const = default;
};

}  // namespace sandgate::ledger
