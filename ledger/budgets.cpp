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

Budget Budgets::known_budget(const std::string& tenant) const {
  std::lock_guard lock(known_mutex_);
  auto it = known_.find(tenant);
  return it == known_.end() ? Budget{} : it->second;
}

void Budgets::remember(const std::string& tenant, const Budget& budget) {
  std::lock_guard lock(known_mutex_);
  if (!budget.any()) {
    known_.erase(tenant);
    return;
  }
  if (auto it = known_.find(tenant); it != known_.end()) {
    it->second = budget;
    return;
  }
  if (known_.size() >= kMaxBudgetsKept) known_.erase(known_.begin());
  known_.emplace(tenant, budget);
}

}  // namespace sandgate::ledger
