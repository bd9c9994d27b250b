#include "ledger/budgets.hpp"

#include "common/usd_text.hpp"

namespace sandgate::ledger {

std::string budget_spent_text(const BudgetSpent& spent) {
  if (spent.unknown)
    return std::string("this tenant's ") + (spent.period == PeriodKind::day ? "daily" : "monthly") +
           " budget of " + usd_text(spent.budget_usd) +
           " cannot be checked right now (the gateway cannot reach its ledger database); try "
           "again shortly";
  return std::string("this tenant's ") + (spent.period == PeriodKind::day ? "daily" : "monthly") +
         " budget of " + usd_text(spent.budget_usd) + " is spent (" + usd_text(spent.spent_usd) +
         " since " +
         utc_text(period_of(spent.period, spent.resets_at - std::chrono::seconds(1)).start) +
         "); no code runs for it until the budget resets at " + utc_text(spent.resets_at);
}

}  // namespace sandgate::ledger
