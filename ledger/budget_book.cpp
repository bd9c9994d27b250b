#include "ledger/budget_book.hpp"

#include <exception>
#include <map>
#include <set>

namespace sandgate::ledger {
namespace {

bool same_period(const Period& a, const Period& b) {
  return a.start == b.start;
}

}  // namespace

BudgetBook::BudgetBook(std::shared_ptr<LedgerStore> store, std::size_t max_tenants)
    : store_(std::move(store)), max_tenants_(max_tenants) {}

std::optional<BudgetSpent> BudgetBook::check(const std::string& tenant, const TenantSpend& spend,
                                             const Budget& budget) {
  if (budget.usd_per_day && spend.day_usd >= *budget.usd_per_day)
    return BudgetSpent{tenant, PeriodKind::day, *budget.usd_per_day, spend.day_usd, spend.day.end};
  if (budget.usd_per_month && spend.month_usd >= *budget.usd_per_month)
    return BudgetSpent{tenant, PeriodKind::month, *budget.usd_per_month, spend.month_usd,
                       spend.month.end};
  return std::nullopt;
}

std::optional<BudgetSpent> BudgetBook::judge(const std::string& tenant, const Budget& budget,
                                             Clock::time_point now) {
  if (auto spend = kept(tenant, now)) return check(tenant, *spend, budget);
  // Missing or of an earlier day: from the store, in order with saves.
  std::lock_guard order(store_order_);
  return check(tenant, current_locked(tenant, now), budget);
}

std::optional<BudgetBook::TenantSpend> BudgetBook::kept(const std::string& tenant,
                                                        Clock::time_point now) {
  std::lock_guard lock(totals_);
  auto it = tenants_.find(tenant);
  if (it == tenants_.end() || !same_period(it->second.day, period_of(PeriodKind::day, now)))
    return std::nullopt;
  it->second.asked = now;
  return it->second;
}

BudgetBook::TenantSpend BudgetBook::load(const std::string& tenant, Clock::time_point now) const {
  const Period day = period_of(PeriodKind::day, now), month = period_of(PeriodKind::month, now);
  return {day, month, store_->spent(tenant, day.start, day.end),
          store_->spent(tenant, month.start, month.end), now};
}

BudgetBook::TenantSpend BudgetBook::current_locked(const std::string& tenant,
                                                   Clock::time_point now) {
  // Loaded meanwhile by another caller that held store_order_ first.
  if (auto spend = kept(tenant, now)) return *spend;
  // Outside totals_: a query may take a while, and readers of loaded tenants need not wait.
  TenantSpend loaded = load(tenant, now);
  std::lock_guard lock(totals_);
  if (tenants_.size() >= max_tenants_) forget_old_locked(now);
  return tenants_[tenant] = loaded;
}

void BudgetBook::forget_old_locked(Clock::time_point now) {
  for (auto it = tenants_.begin(); it != tenants_.end();)
    it = now - it->second.asked > std::chrono::hours(1) ? tenants_.erase(it) : std::next(it);
}

void BudgetBook::save(const std::vector<UsageRecord>& records) {
  save(records, Clock::now());
}

void BudgetBook::save(const std::vector<UsageRecord>& records, Clock::time_point now) {
  const Period today = period_of(PeriodKind::day, now);
  // The tenants whose spend this save grew, with their totals after it.
  std::vector<std::pair<std::string, TenantSpend>> grown;
  std::map<std::string, double> growth;  // every tenant's, for on_growth
  std::exception_ptr failed;
  {
    std::lock_guard order(store_order_);
    try {
      store_->save(records);
    } catch (const std::exception&) {
      // Counted all the same, so that budgets hold while the store is out: the writer saves
      // these totals again, and a stretch's growth is counted once whenever it is saved.
      failed = std::current_exception();
    }
    std::set<std::string> grown_names;
    // Tenants whose totals are of an earlier day, or missed a stretch the book forgot: read
    // again from the store (this save included) rather than grown.
    std::set<std::string> stale;
    {
      std::lock_guard lock(totals_);
      count_growth_locked(records, today, growth, grown_names, stale);
      growth_.forget_old(today);
      // Read again when next asked if the store does not have this save.
      if (failed)
        for (const auto& name : stale) tenants_.erase(name);
    }
    if (!failed)
      for (const auto& name : stale) {
        TenantSpend loaded = load(name, now);
        std::lock_guard lock(totals_);
        tenants_[name] = loaded;
        grown_names.insert(name);
      }
    std::lock_guard lock(totals_);
    for (const auto& name : grown_names) grown.emplace_back(name, tenants_.at(name));
  }
  if (on_growth_)
    for (const auto& [tenant, usd] : growth) on_growth_(tenant, usd);
  report_spent(grown);
  if (failed) std::rethrow_exception(failed);
}

void BudgetBook::count_growth_locked(const std::vector<UsageRecord>& records, const Period& today,
                                     std::map<std::string, double>& growth,
                                     std::set<std::string>& grown, std::set<std::string>& stale) {
  for (const auto& record : records) {
    auto tenant = tenants_.find(record.tenant);
    bool counted = tenant != tenants_.end();
    if (counted && !same_period(tenant->second.day, today)) {
      stale.insert(record.tenant);
      counted = false;
    }
    auto added = growth_.add(record, today);
    if (!added) {
      // A stretch of a day the book no longer remembers: the store holds its totals.
      if (counted) stale.insert(record.tenant);
      continue;
    }
    if (*added <= 0) continue;
    growth[record.tenant] += *added;
    if (!counted || stale.count(record.tenant)) continue;
    // A stretch lies within one UTC day: the one it started in.
    TenantSpend& spend = tenant->second;
    if (record.started >= spend.day.start && record.started < spend.day.end)
      spend.day_usd += *added;
    if (record.started >= spend.month.start && record.started < spend.month.end)
      spend.month_usd += *added;
    grown.insert(record.tenant);
  }
}

void BudgetBook::report_spent(const std::vector<std::pair<std::string, TenantSpend>>& grown) {
  std::vector<BudgetSpent> spent_now;
  for (const auto& [tenant, spend] : grown) {
    Budget budget = known_budget(tenant);
    if (auto spent = check(tenant, spend, budget)) spent_now.push_back(*spent);
  }
  if (spent_now.empty() || !on_spent_) return;
  try {
    on_spent_(spent_now);
  } catch (const std::exception&) {
    // The batch is counted: the writer must not take it for a failed save. The next save that
    // grows the tenant's spend reports it again.
  }
}

double BudgetBook::spent(std::string_view tenant, Clock::time_point from,
                         Clock::time_point until) const {
  std::lock_guard order(store_order_);
  return store_->spent(tenant, from, until);
}

std::vector<UsageRow> BudgetBook::usage(const UsageQuery& query, Grouping grouping) const {
  std::lock_guard order(store_order_);
  return store_->usage(query, grouping);
}

std::size_t BudgetBook::tenants_kept() const {
  std::lock_guard lock(totals_);
  return tenants_.size();
}

}  // namespace sandgate::ledger
