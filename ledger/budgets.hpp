#pragma once
// Tenant budgets (issue #28): a daily and a monthly limit per tenant, in USD, over calendar
// periods in UTC. Whatever keeps the count — one gateway's book (budget_book) or reservations
// several replicas share (shared_budgets) — stands between the usage writer and the store: every
// batch saved passes through it, so it knows what each tenant spent without a query per call.
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "ledger/budget_period.hpp"
#include "ledger/ledger_store.hpp"

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

// A budget a tenant has spent: which, how much, and when it is available again.
struct BudgetSpent {
  std::string tenant;
  PeriodKind period = PeriodKind::day;
  double budget_usd = 0;
  double spent_usd = 0;
  Clock::time_point resets_at;
  // Not known to be spent: the ledger database cannot be reached and this replica's
  // reservation is used up (--ledger-unreachable refuse).
  bool unknown = false;
};
// What the model is told: "this tenant's daily budget of $5.00 is spent ($5.01 since
// 2026-12-04T00:00:00Z); no code runs for it until the budget resets at 2026-12-05T00:00:00Z";
// or, unknown, that it cannot be checked right now.
std::string budget_spent_text(const BudgetSpent& spent);

class Budgets : public LedgerStore {
 public:
  // The tenant's budget as its policy says now (a tokens-file reload changes it at once). Called
  // from request threads and the writer's, never under the budgets' locks.
  using BudgetOf = std::function<Budget(const std::string& tenant)>;
  // Tenants a save found over a budget whose spend grew in that save: their running sandboxes
  // are to end. Called on the writer's thread, after the save, outside the budgets' locks.
  using OnSpent = std::function<void(const std::vector<BudgetSpent>&)>;
  // What a save added to a tenant's spend (every tenant, with a budget or not): for the
  // gateway's metrics. Called on the writer's thread, outside the budgets' locks.
  using OnGrowth = std::function<void(const std::string& tenant, double usd)>;

  // Set before the writer starts.
  void on_spent(OnSpent hook) { on_spent_ = std::move(hook); }
  void on_growth(OnGrowth hook) { on_growth_ = std::move(hook); }

  // The budget `tenant` has spent at `now`, if any: a new call must not run. A tenant without
  // a budget costs no lookup. Throws LedgerError when the count cannot be known.
  virtual std::optional<BudgetSpent> refusal(const std::string& tenant, Clock::time_point now) = 0;
  // The gateway stops (after the writer's last save): what it holds for others is given back.
  virtual void release() {}

 protected:
  OnSpent on_spent_;
  OnGrowth on_growth_;
};

}  // namespace sandgate::ledger
