#include "ledger/shared_budgets.hpp"

#include <algorithm>
#include <exception>
#include <map>
#include <set>
#include <tuple>

namespace sandgate::ledger {
namespace {

constexpr PeriodKind kKinds[] = {PeriodKind::day, PeriodKind::month};

bool within(Clock::time_point at, const Period& period) {
  return at >= period.start && at < period.end;
}

}  // namespace

SharedBudgets::SharedBudgets(std::shared_ptr<LedgerStore> store,
                             std::shared_ptr<ReservationStore> reservations,
                             SharedBudgetOptions options)
    : store_(std::move(store)), reservations_(std::move(reservations)), options_(options) {}

SharedBudgets::TenantShares& SharedBudgets::tenant_locked(const std::string& tenant,
                                                          Clock::time_point now) {
  TenantShares& t = tenants_[tenant];
  for (PeriodKind kind : kKinds) {
    Share& s = share(t, kind);
    Period current = period_of(kind, now);
    // A new period: nothing used or reserved in it yet (what was reserved in the last one
    // stays there; the budget resets). Never back: a save that read the clock before a request
    // moved the share on must not undo it.
    if (s.period.kind != kind || current.start > s.period.start) {
      s = Share();
      s.period = current;
    }
  }
  return t;
}

ReservationStore::Grant SharedBudgets::reserve_marked(const std::string& tenant, PeriodKind kind,
                                                      const Period& period, double wanted,
                                                      double limit, Clock::time_point now) {
  {
    std::lock_guard lock(mutex_);
    share(tenant_locked(tenant, now), kind).reserving = true;
  }
  struct Unmark {
    SharedBudgets& self;
    const std::string& tenant;
    PeriodKind kind;
    Clock::time_point now;
    ~Unmark() {
      std::lock_guard lock(self.mutex_);
      share(self.tenant_locked(tenant, now), kind).reserving = false;
    }
  } unmark{*this, tenant, kind, now};
  return reservations_->reserve(tenant, period, wanted, limit);
}

std::optional<BudgetSpent> SharedBudgets::judge(const std::string& tenant, const Budget& budget,
                                                Clock::time_point now) {
  for (PeriodKind kind : kKinds) {
    auto limit = budget.of(kind);
    if (!limit) continue;
    Period period;
    double wanted = options_.chunk_usd;
    bool exhausted = false;
    {
      std::lock_guard lock(mutex_);
      Share& s = share(tenant_locked(tenant, now), kind);
      // Within this replica's reservation: no round trip. Nor while another call's reservation
      // is on its way: calls starting together take one chunk, not one each (the next save
      // stops the tenant should that one find the budget spent).
      if (!s.exhausted && (s.used < s.reserved || s.reserving)) continue;
      // Stopped here a moment ago: refused without asking the database again.
      if (s.exhausted && now - s.asked_database < std::chrono::seconds(1))
        return BudgetSpent{tenant, kind, *limit, std::max(s.claimed, s.used), s.period.end};
      s.asked_database = now;
      period = s.period;
      exhausted = s.exhausted;
      // A chunk beyond what was used past the reservation (an outage, a burst): asking for less
      // would find "nothing left" in what this replica itself used.
      wanted += std::max(0.0, s.used - s.reserved);
    }
    // Used up here: another chunk, or the budget is spent.
    ReservationStore::Grant grant;
    try {
      grant = reserve_marked(tenant, kind, period, wanted, *limit, now);
    } catch (const LedgerError&) {
      // A tenant already stopped stays stopped: an outage lets no one past a spent budget.
      if (options_.allow_when_unreachable && !exhausted) continue;
      throw;
    }
    std::lock_guard lock(mutex_);
    Share& s = share(tenant_locked(tenant, now), kind);
    if (s.period.start != period.start) continue;  // a new period began meanwhile
    s.reserved += grant.granted;
    s.claimed = grant.claimed;
    if (s.used < s.reserved && (!s.exhausted || grant.granted > 0)) {
      s.exhausted = false;
      continue;
    }
    s.exhausted = true;
    return BudgetSpent{tenant, kind, *limit, std::max(s.claimed, s.used), period.end};
  }
  // A call runs: what this replica holds for the tenant is in use (a refused call does not
  // keep a reservation from going back).
  std::lock_guard lock(mutex_);
  tenant_locked(tenant, now).asked = now;
  return std::nullopt;
}

void SharedBudgets::save(const std::vector<UsageRecord>& records) {
  std::lock_guard order(store_order_);
  auto failed = save_to_store(records);
  // The clock read after the store's save, which may take a while: a request may have moved a
  // tenant into the next day meanwhile.
  account(records, Clock::now());
  if (failed) std::rethrow_exception(failed);
}

void SharedBudgets::save(const std::vector<UsageRecord>& records, Clock::time_point now) {
  std::lock_guard order(store_order_);
  auto failed = save_to_store(records);
  account(records, now);
  if (failed) std::rethrow_exception(failed);
}

std::exception_ptr SharedBudgets::save_to_store(const std::vector<UsageRecord>& records) {
  try {
    store_->save(records);
    return nullptr;
  } catch (const std::exception&) {
    // Counted all the same: budgets hold while the database is out, and the writer saves these
    // totals again (a stretch's growth counts once).
    return std::current_exception();
  }
}

void SharedBudgets::account(const std::vector<UsageRecord>& records, Clock::time_point now) {
  // Every tenant with a budget its calls here told of is counted (a sandbox alive across
  // midnight too): its use is claimed by this replica alone.
  std::set<std::string> budgeted;
  {
    std::set<std::string> seen;
    for (const auto& record : records)
      if (seen.insert(record.tenant).second && known_budget(record.tenant).any())
        budgeted.insert(record.tenant);
  }
  const Period today = period_of(PeriodKind::day, now);
  std::map<std::string, double> growth;  // every tenant's, for on_growth
  std::vector<std::string> grown;        // tenants with a budget, whose use grew
  std::map<std::pair<std::string, PeriodKind>, double> paced;  // what this save added to each
  {
    std::lock_guard lock(mutex_);
    for (const auto& record : records) {
      auto added = growth_.add(record, today);
      if (!added || *added <= 0) continue;
      growth[record.tenant] += *added;
      if (!budgeted.count(record.tenant)) continue;
      TenantShares& t = tenant_locked(record.tenant, now);
      // A stretch lies within one UTC day: the one it started in.
      for (PeriodKind kind : kKinds)
        if (Share& s = share(t, kind); within(record.started, s.period)) {
          s.used += *added;
          paced[{record.tenant, kind}] += *added;
        }
      t.grew = now;
    }
    for (const auto& [key, usd] : paced) share(tenants_.at(key.first), key.second).recent = usd;
    growth_.forget_old(today);
    for (const auto& entry : growth)
      if (budgeted.count(entry.first)) grown.push_back(entry.first);
  }
  if (on_growth_)
    for (const auto& [tenant, usd] : growth) on_growth_(tenant, usd);
  std::vector<BudgetSpent> spent_now;
  for (const auto& tenant : grown)
    if (auto spent = top_up(tenant, now)) spent_now.push_back(*spent);
  give_back(now - options_.idle_return, now);
  if (!spent_now.empty() && on_spent_) {
    try {
      on_spent_(spent_now);
    } catch (const std::exception&) {
      // Reported again by the next save that grows the tenant's use.
    }
  }
}

std::optional<BudgetSpent> SharedBudgets::top_up(const std::string& tenant, Clock::time_point now) {
  Budget budget = known_budget(tenant);
  std::optional<BudgetSpent> first_spent;
  for (PeriodKind kind : kKinds) {
    auto limit = budget.of(kind);
    if (!limit) continue;
    auto spent = top_up_period(tenant, kind, *limit, now);
    if (spent && !first_spent) first_spent = spent;
  }
  return first_spent;
}

std::optional<BudgetSpent> SharedBudgets::top_up_period(const std::string& tenant, PeriodKind kind,
                                                        double limit, Clock::time_point now) {
  Period period;
  double left = 0, forecast = 0;
  {
    std::lock_guard lock(mutex_);
    const Share& s = share(tenant_locked(tenant, now), kind);
    period = s.period;
    left = s.reserved - s.used;
    // What the running sandboxes may use before a save has seen it and ended them: what
    // their meter's sample has not seen yet (a second at most) and what they use until the
    // next save (a save interval) — two save intervals at the pace of the last.
    forecast = 2 * s.recent;
  }
  if (left >= std::max(options_.chunk_usd / 2, forecast)) return std::nullopt;
  // Running low: the next chunk now, rather than on a call's path; and what was used past
  // the reservation, if it fits.
  const double wanted = std::max(options_.chunk_usd, forecast) + std::max(0.0, -left);
  std::optional<BudgetSpent> spent;
  try {
    auto grant = reservations_->reserve(tenant, period, wanted, limit);
    double over = 0;
    {
      std::lock_guard lock(mutex_);
      Share& s = share(tenant_locked(tenant, now), kind);
      if (s.period.start != period.start) return std::nullopt;
      s.reserved += grant.granted;
      s.claimed = grant.claimed;
      over = s.used - s.reserved;
    }
    if (over > 0) {
      // Used past all that could be reserved: claimed all the same, so that the claims say
      // what was spent.
      double claimed = reservations_->settle(tenant, period, over);
      std::lock_guard lock(mutex_);
      Share& s = share(tenant_locked(tenant, now), kind);
      if (s.period.start != period.start) return std::nullopt;
      s.reserved += over;
      s.claimed = claimed;
    }
    std::lock_guard lock(mutex_);
    Share& s = share(tenant_locked(tenant, now), kind);
    // The budget gave what it had: the tenant's sandboxes here end before they pass it.
    if (s.period.start == period.start && grant.granted < wanted &&
        s.reserved - s.used <= forecast) {
      s.exhausted = true;
      spent = BudgetSpent{tenant, kind, limit, std::max(s.claimed, s.used), period.end};
    }
  } catch (const LedgerError&) {
    // The database is out: the next save tries again. Sandboxes that used all this replica
    // reserved end (unless told to allow): an outage must not let a running loop spend on.
    std::lock_guard lock(mutex_);
    const Share& s = share(tenant_locked(tenant, now), kind);
    if (!options_.allow_when_unreachable && s.period.start == period.start && s.used >= s.reserved)
      spent = BudgetSpent{tenant, kind, limit, s.used, period.end, true};
  }
  return spent;
}

void SharedBudgets::give_back(std::optional<Clock::time_point> idle_before, Clock::time_point now) {
  std::vector<std::tuple<std::string, Period, double>> unused;
  {
    std::lock_guard lock(mutex_);
    for (auto it = tenants_.begin(); it != tenants_.end();) {
      TenantShares& t = it->second;
      const auto last = std::max(t.asked, t.grew);
      // A tenant stopped here whose sandboxes' last use has been seen (no growth in this save):
      // what it still holds goes back at once, for the other replicas to use.
      const bool stopped = t.grew < now && (t.day.exhausted || t.month.exhausted);
      if (idle_before && last >= *idle_before && !stopped) {
        ++it;
        continue;
      }
      bool holds = false;
      for (PeriodKind kind : kKinds) {
        Share& s = share(t, kind);
        if (s.reserved > s.used && within(now, s.period)) {
          // Off this replica's count at once: no call is let in on what is going back. Should
          // the statement fail, it stays claimed (until the period ends): early, never late.
          unused.emplace_back(it->first, s.period, s.reserved - s.used);
          s.reserved = s.used;
          holds = true;
        }
      }
      // Idle for an hour and holding nothing: forgotten (made again when next asked).
      if (idle_before && !holds && now - last > std::chrono::hours(1))
        it = tenants_.erase(it);
      else
        ++it;
    }
  }
  for (const auto& [tenant, period, amount] : unused) {
    try {
      double claimed = reservations_->settle(tenant, period, -amount);
      std::lock_guard lock(mutex_);
      Share& s = share(tenant_locked(tenant, now), period.kind);
      if (s.period.start == period.start) s.claimed = claimed;
    } catch (const LedgerError&) {
      // Left claimed: the tenant may be refused a little early this period, never late.
    }
  }
}

void SharedBudgets::release() {
  release(Clock::now());
}

void SharedBudgets::release(Clock::time_point now) {
  std::lock_guard order(store_order_);
  give_back(std::nullopt, now);
}

double SharedBudgets::spent(std::string_view tenant, Clock::time_point from,
                            Clock::time_point until) const {
  return store_->spent(tenant, from, until);
}

std::vector<UsageRow> SharedBudgets::usage(const UsageQuery& query, Grouping grouping) const {
  return store_->usage(query, grouping);
}

SharedBudgets::ShareView SharedBudgets::share_of(const std::string& tenant, PeriodKind kind,
                                                 Clock::time_point now) {
  std::lock_guard lock(mutex_);
  const Share& s = share(tenant_locked(tenant, now), kind);
  return {s.used, s.reserved, s.claimed};
}

}  // namespace sandgate::ledger
