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
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "ledger/budgets.hpp"
#include "ledger/stretch_growth.hpp"

namespace sandgate::ledger {

class BudgetBook final : public Budgets {
 public:
  // At most `max_tenants` tenants' totals are kept; beyond, those not asked about for an hour
  // are forgotten (loaded again when asked): OAuth tenants are as many as the issuer mints.
  static constexpr std::size_t kMaxTenants = 100'000;
  explicit BudgetBook(std::shared_ptr<LedgerStore> store, std::size_t max_tenants = kMaxTenants);

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
  // The budget `tenant` has spent at `now`, if any. Throws LedgerError when the store cannot be
  // read.
  std::optional<BudgetSpent> judge(const std::string& tenant, const Budget& budget,
                                   Clock::time_point now) override;
  struct TenantSpend {
    Period day, month;
    double day_usd = 0, month_usd = 0;
    Clock::time_point asked;
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
  // Adds the records' growth to the kept totals (totals_ held): every tenant's into `growth`,
  // the tenants whose totals grew into `grown`, those to read again from the store into
  // `stale`.
  void count_growth_locked(const std::vector<UsageRecord>& records, const Period& today,
                           std::map<std::string, double>& growth, std::set<std::string>& grown,
                           std::set<std::string>& stale);

  const std::shared_ptr<LedgerStore> store_;
  const std::size_t max_tenants_;
  // Held across a save and the totals it grows, and across a load from the store: a load never
  // sees a batch whose growth is not yet counted (it would be counted twice). Before totals_.
  mutable std::mutex store_order_;
  mutable std::mutex totals_;
  std::unordered_map<std::string, TenantSpend> tenants_;
  StretchGrowth growth_;  // under totals_
};

}  // namespace sandgate::ledger
