#pragma once
// Tenant budgets (issue #28): a daily and a monthly limit per tenant, in USD, over calendar
// periods in UTC. The book stands between the usage writer and the store: every batch saved
// passes through it, so it knows each tenant's spend this day and this month without a query
// per call — loaded from the store the first time a tenant is asked about in a period, then
// grown by what each save adds to the ledger.
//
// A tenant whose budget is spent is refused new calls (refusal()); the save that finds a
// tenant over a budget reports it (the on_spent hook), and the gateway ends its running
// sandboxes. So what a tenant can spend past its budget is what its running sandboxes meter in
// one save interval and one save, and what a SIGKILL lost (the same bound). A batch the store
// refuses is counted all the same: budgets hold while the disk is out.
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "ledger/budget_period.hpp"
#include "ledger/ledger_store.hpp"

namespace sandgate::ledger {

struct Budget {
  std::optional<double> usd_per_day;
  std::optional<double> usd_per_month;
  bool any() const { return usd_per_day.has_value() || usd_per_month.has_value(); }
  bool operator==(const Budget&) const = default;
};

// A budget a tenant has spent: which, how much, and when it is available again.
struct BudgetSpent {
  std::string tenant;
  PeriodKind period = PeriodKind::day;
  double budget_usd = 0;
  double spent_usd = 0;
  Clock::time_point resets_at;
};
// What the model is told: "this tenant's daily budget of $5.00 is spent ($5.01 since
// 2026-12-04T00:00:00Z); no code runs for it until the budget resets at 2026-12-05T00:00:00Z".
std::string budget_spent_text(const BudgetSpent& spent);

class BudgetBook final : public LedgerStore {
 public:
  // The tenant's budget as its policy says now (a tokens-file reload changes it at once). Called
  // from request threads and the writer's, never under the book's locks.
  using BudgetOf = std::function<Budget(const std::string& tenant)>;
  // Tenants a save found over a budget whose spend grew in that save: their running sandboxes
  // are to end. Called on the writer's thread, after the save, outside the book's locks.
  using OnSpent = std::function<void(const std::vector<BudgetSpent>&)>;

  // At most `max_tenants` tenants' totals are kept; beyond, those not asked about for an hour
  // are forgotten (loaded again when asked): OAuth tenants are as many as the issuer mints.
  static constexpr std::size_t kMaxTenants = 100'000;
  BudgetBook(std::shared_ptr<LedgerStore> store, BudgetOf budget_of,
             std::size_t max_tenants = kMaxTenants);

  // Set before the writer starts.
  void on_spent(OnSpent hook) { on_spent_ = std::move(hook); }
  // The budget `tenant` has spent at `now`, if any: a new call must not run. A tenant without
  // a budget costs no lookup. Throws LedgerError when the store cannot be read.
  std::optional<BudgetSpent> refusal(const std::string& tenant, Clock::time_point now);

  // LedgerStore: save passes to the store, then adds what the batch grew to the tenants'
  // totals; the reads pass through.
  void save(const std::vector<UsageRecord>& records) override;
  // save(), at `now` (which day and month are current): for tests. A batch the store refuses
  // (LedgerError, rethrown) is counted all the same, so a budget holds while the store is out.
  void save(const std::vector<UsageRecord>& records, Clock::time_point now);
  double spent(std::string_view tenant, Clock::time_point from,
               Clock::time_point until) const override;
  std::vector<UsageRow> usage(const UsageQuery& query, Grouping grouping) const override;

  std::size_t tenants_kept() const;

 private:
  struct TenantSpend {
    Period day, month;
    double day_usd = 0, month_usd = 0;
    Clock::time_point asked;
  };
  struct StretchSeen {
    double usd = 0;
    Clock::time_point day_start;
  };
  // The tenant's totals kept for the day `now` is in (marked asked), if any.
  std::optional<TenantSpend> kept(const std::string& tenant, Clock::time_point now);
  // The tenant's totals for the day and month `now` is in, read from the store.
  TenantSpend load(const std::string& tenant, Clock::time_point now) const;
  // kept(), else load() and keep. Needs store_order_ held.
  TenantSpend current_locked(const std::string& tenant, Clock::time_point now);
  // Tells on_spent which of the `grown` tenants a budget now stops.
  void report_spent(const std::vector<std::pair<std::string, TenantSpend>>& grown);
  // What `budget` says of `spend`: the first period spent, if any.
  static std::optional<BudgetSpent> check(const std::string& tenant, const TenantSpend& spend,
                                          const Budget& budget);
  void forget_old_locked(Clock::time_point now);

  const std::shared_ptr<LedgerStore> store_;
  const BudgetOf budget_of_;
  const std::size_t max_tenants_;
  OnSpent on_spent_;
  // Held across a save and the totals it grows, and across a load from the store: a load never
  // sees a batch whose growth is not yet counted (it would be counted twice). Before totals_.
  mutable std::mutex store_order_;
  mutable std::mutex totals_;
  std::unordered_map<std::string, TenantSpend> tenants_;
  // Each stretch's spend as last saved (what a new total adds is the difference); stretches of
  // days before yesterday are forgotten (at most two days' sandboxes are remembered).
  std::unordered_map<std::string, StretchSeen> stretches_;
  Clock::time_point forgot_at_;
};

}  // namespace sandgate::ledger
