#pragma once
// Tenant budgets (issue #28): a daily and a monthly limit per tenant, in USD, over calendar
// periods in UTC. Whatever keeps the count — one gateway's book (budget_book) or reservations
// several replicas share (shared_budgets) — stands between the usage writer and the store: every
// batch saved passes through it, so it knows what each tenant spent without a query per call.
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "ledger/budget.hpp"
#include "ledger/budget_period.hpp"
#include "ledger/ledger_store.hpp"

namespace sandgate::ledger {

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
  // Tenants a save found over a budget whose spend grew in that save: their running sandboxes
  // are to end. Called on the writer's thread, after the save, outside the budgets' locks.
  using OnSpent = std::function<void(const std::vector<BudgetSpent>&)>;
  // What a save added to a tenant's spend (every tenant, with a budget or not): for the
  // gateway's metrics. Called on the writer's thread, outside the budgets' locks.
  using OnGrowth = std::function<void(const std::string& tenant, double usd)>;

  // Set before the writer starts.
  void on_spent(OnSpent hook) { on_spent_ = std::move(hook); }
  void on_growth(OnGrowth hook) { on_growth_ = std::move(hook); }

  // The budget `tenant` has spent at `now`, if any: a new call must not run. `budget` is what
  // the tenant's terms say now (handed down with the call, never looked up from here); it is
  // remembered, so that the saves judge the tenant's growth by it until its next call says
  // otherwise. A tenant without a budget costs no lookup. Throws LedgerError when the count
  // cannot be known.
  std::optional<BudgetSpent> refusal(const std::string& tenant, const Budget& budget,
                                     Clock::time_point now) {
    remember(tenant, budget);
    if (!budget.any()) return std::nullopt;
    return judge(tenant, budget, now);
  }
  // The gateway stops (after the writer's last save): what it holds for others is given back.
  virtual void release() {}

  // At most this many tenants' budgets are remembered (beyond, one is forgotten for each new
  // one, and learnt again at its next call): OAuth tenants are as many as the issuer mints.
  static constexpr std::size_t kMaxBudgetsKept = 100'000;

 protected:
  // refusal() for a tenant with a budget.
  virtual std::optional<BudgetSpent> judge(const std::string& tenant, const Budget& budget,
                                           Clock::time_point now) = 0;
  // The budget `tenant`'s last call was given; none when it has none or made no call here.
  Budget known_budget(const std::string& tenant) const;

  OnSpent on_spent_;
  OnGrowth on_growth_;

 private:
  void remember(const std::string& tenant, const Budget& budget);

  mutable std::mutex known_mutex_;
  std::unordered_map<std::string, Budget> known_;  // tenants with a budget only
};

}  // namespace sandgate::ledger
