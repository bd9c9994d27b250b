#pragma once
// Tenant budgets across replicas that share one ledger (issue #28). Each replica reserves a
// tenant's spend in chunks (ReservationStore: one atomic statement, never past the budget) and
// lets the tenant's calls run while what it used of the period stays within what it reserved;
// only when a reservation is used up does a call wait for the database. Saves grow what was
// used: a replica running low reserves the next chunk ahead of the calls that need it, settles
// what it used past its reservation, and — when nothing more can be reserved — reports the
// tenant spent so that its running sandboxes end. Unused reservations are given back once a
// tenant is idle on a replica, and when the gateway stops.
//
// So the claims never pass a budget but by what running sandboxes used past their replica's
// reservation before a save ended them — and a replica ends them early, once what is left of
// its reservation is less than twice what they used in the last save interval: a tenant's
// spend stays within its budget plus, per replica, what its sandboxes use beyond that forecast
// (at most a chunk when they use less than a chunk per save interval; docs/operations.md). A
// replica
// killed without warning leaves its unused reservation claimed until the period ends: a tenant
// may then be refused before its budget is spent, never the other way round.
#include <cstddef>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "ledger/budgets.hpp"
#include "ledger/reservations.hpp"
#include "ledger/stretch_growth.hpp"

namespace sandgate::ledger {

struct SharedBudgetOptions {
  double chunk_usd = 0.10;  // what one reservation asks for
  // When the database cannot be reached: refuse a tenant's calls past its reservation (false),
  // or let them run uncounted by the budget (true).
  bool allow_when_unreachable = false;
  // A tenant whose sandboxes on this replica used nothing, and that started no call here, for
  // this long gives back what it reserved and did not use (a live sandbox's memory is charged
  // every second: a tenant this quiet has none).
  std::chrono::seconds idle_return{5};

  bool operator==(const SharedBudgetOptions&) const = default;
};

class SharedBudgets final : public Budgets {
 public:
  SharedBudgets(std::shared_ptr<LedgerStore> store, std::shared_ptr<ReservationStore> reservations,
                SharedBudgetOptions options);

  void save(const std::vector<UsageRecord>& records) override;
  // save(), at `now`: for tests. A batch the store refuses is counted all the same (rethrown).
  void save(const std::vector<UsageRecord>& records, Clock::time_point now);
  double spent(std::string_view tenant, Clock::time_point from,
               Clock::time_point until) const override;
  std::vector<UsageRow> usage(const UsageQuery& query, Grouping grouping) const override;
  // Gives back every unused reservation of the periods current at `now`.
  void release() override;
  void release(Clock::time_point now);

  // This replica's view of `tenant` in the period of `kind` at `now`: used and reserved (tests).
  struct ShareView {
    double used = 0, reserved = 0, claimed = 0;
  };
  ShareView share_of(const std::string& tenant, PeriodKind kind, Clock::time_point now);

 private:
  // The budget `tenant` has spent at `now`, if any: within its reservation at once, else after
  // reserving another chunk. Throws LedgerError when the database cannot be reached (unless
  // told to allow then).
  std::optional<BudgetSpent> judge(const std::string& tenant, const Budget& budget,
                                   Clock::time_point now) override;
  struct Share {
    Period period;
    double used = 0;      // by this replica's sandboxes, this period
    double reserved = 0;  // by this replica, this period (≥ used once settled)
    double claimed = 0;   // all replicas' claims, when last heard
    double recent = 0;    // what the last save that grew it added: the pace of its sandboxes
    // The budget had nothing more to give and this replica stopped the tenant: new calls are
    // refused, the database asked again at most once a second (another replica may give back).
    bool exhausted = false;
    Clock::time_point asked_database;
    bool reserving = false;  // a call's reservation is on its way
  };
  struct TenantShares {
    Share day, month;
    Clock::time_point asked, grew;
  };
  static Share& share(TenantShares& t, PeriodKind kind) {
    return kind == PeriodKind::day ? t.day : t.month;
  }
  // Saves to the store; what it threw, if anything (counted all the same).
  std::exception_ptr save_to_store(const std::vector<UsageRecord>& records);
  // Grows what tenants used by what `records` add, reserves ahead, reports spent tenants and
  // gives back what quiet tenants hold.
  void account(const std::vector<UsageRecord>& records, Clock::time_point now);
  // The tenant's shares, made or moved to the periods `now` is in. Needs mutex_.
  TenantShares& tenant_locked(const std::string& tenant, Clock::time_point now);
  // reserve(), with the share marked as reserving meanwhile.
  ReservationStore::Grant reserve_marked(const std::string& tenant, PeriodKind kind,
                                         const Period& period, double wanted, double limit,
                                         Clock::time_point now);
  // After a save grew `tenant`'s use: reserves ahead, settles use past the reservation, and says
  // which budget is spent, if one is.
  std::optional<BudgetSpent> top_up(const std::string& tenant, Clock::time_point now);
  // top_up's work for one of the tenant's periods, whose budget is `limit`.
  std::optional<BudgetSpent> top_up_period(const std::string& tenant, PeriodKind kind, double limit,
                                           Clock::time_point now);
  // Gives back the unused reservations of tenants idle since `idle_before` (all when null).
  void give_back(std::optional<Clock::time_point> idle_before, Clock::time_point now);

  const std::shared_ptr<LedgerStore> store_;
  const std::shared_ptr<ReservationStore> reservations_;
  const SharedBudgetOptions options_;
  std::mutex store_order_;  // one save at a time (the writer's thread; tests)
  std::mutex mutex_;
  std::unordered_map<std::string, TenantShares> tenants_;
  StretchGrowth growth_;  // under mutex_
};

}  // namespace sandgate::ledger
