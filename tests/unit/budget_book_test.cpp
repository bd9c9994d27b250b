// Tenant budgets on their own (issue #28): the book over a real SQLite ledger (in memory) —
// what was spent before it was asked comes from the store, what each save adds is counted once
// (a live stretch's growing totals by their growth), days and months are UTC calendar periods,
// and a save that takes a tenant over its budget says so once its spend grew.
#include "ledger/budget_book.hpp"

#include <catch2/catch.hpp>
#include <map>

#include "ledger/sqlite_ledger.hpp"

using namespace sandgate::ledger;
using namespace std::chrono;

namespace {

Clock::time_point utc(int y, unsigned m, unsigned d, int hh = 0, int mm = 0) {
  return sys_days{year{y} / month{m} / day{d}} + hours(hh) + minutes(mm);
}

UsageRecord stretch(const std::string& key, const std::string& tenant, Clock::time_point started,
                    double usd, bool final = false) {
  UsageRecord r;
  r.stretch = key;
  r.tenant = tenant;
  r.owner = "0a1b2c3d";
  r.owner_kind = "session";
  r.started = started;
  r.ended = started + minutes(1);
  r.usd = usd;
  r.final = final;
  return r;
}

// The store the book stands before, counting the book's reads of it.
struct CountingStore final : LedgerStore {
  SqliteLedger ledger{"", SqliteLedger::Access::in_memory};
  mutable int reads = 0;
  bool failing = false;
  void save(const std::vector<UsageRecord>& records) override {
    if (failing) throw LedgerError("the disk is full");
    ledger.save(records);
  }
  double spent(std::string_view tenant, Clock::time_point from,
               Clock::time_point until) const override {
    ++reads;
    return ledger.spent(tenant, from, until);
  }
  std::vector<UsageRow> usage(const UsageQuery& query, Grouping grouping) const override {
    return ledger.usage(query, grouping);
  }
};

struct Fixture {
  // What a call of `t` asks: its budget as its terms say now (`budgets`).
  std::optional<BudgetSpent> ask(const std::string& t, Clock::time_point now) {
    auto it = budgets.find(t);
    return book.refusal(t, it == budgets.end() ? Budget{} : it->second, now);
  }
  std::shared_ptr<CountingStore> store = std::make_shared<CountingStore>();
  std::map<std::string, Budget> budgets;
  std::vector<BudgetSpent> reported;
  BudgetBook book{store};
  Fixture() {
    book.on_spent([this](const std::vector<BudgetSpent>& spent) {
      reported.insert(reported.end(), spent.begin(), spent.end());
    });
  }
};

}  // namespace

TEST_CASE("a tenant without a budget is never refused and costs no read", "[unit][ledger]") {
  Fixture f;
  f.book.save({stretch("a", "free", utc(2026, 12, 4, 9), 1000)}, utc(2026, 12, 4, 10));
  CHECK_FALSE(f.ask("free", utc(2026, 12, 4, 10)));
  CHECK(f.store->reads == 0);
  CHECK(f.reported.empty());
}

TEST_CASE(
    "what a tenant spent before it was asked comes from the store, and each save adds its growth",
    "[unit][ledger]") {
  Fixture f;
  f.budgets["acme"] = {5.0, std::nullopt};
  const auto morning = utc(2026, 12, 4, 9), now = utc(2026, 12, 4, 12);
  // Saved before the book knew of acme (another start of the gateway): 4.5 of 5.
  f.book.save({stretch("old", "acme", morning, 4.5, true)}, morning);
  CHECK_FALSE(f.ask("acme", now));
  CHECK(f.store->reads == 2);  // its day and its month, once
  CHECK_FALSE(f.ask("acme", now));
  CHECK(f.store->reads == 2);
  // A live stretch saved three times with growing totals adds 0.4, not 0.1 + 0.3 + 0.4.
  f.book.save({stretch("live", "acme", now, 0.1)}, now);
  f.book.save({stretch("live", "acme", now, 0.3)}, now);
  f.book.save({stretch("live", "acme", now, 0.4)}, now);
  CHECK_FALSE(f.ask("acme", now));
  CHECK(f.reported.empty());
  f.book.save({stretch("live", "acme", now, 0.55, true)}, now);
  auto spent = f.ask("acme", now);
  REQUIRE(spent);
  CHECK(spent->period == PeriodKind::day);
  CHECK(spent->budget_usd == Approx(5.0));
  CHECK(spent->spent_usd == Approx(5.05));
  CHECK(spent->resets_at == utc(2026, 12, 5));
  CHECK(budget_spent_text(*spent) ==
        "this tenant's daily budget of $5.00 is spent ($5.05 since 2026-12-04T00:00:00Z); no code "
        "runs for it until the budget resets at 2026-12-05T00:00:00Z");
  // The save that crossed it said so, once, for acme alone.
  REQUIRE(f.reported.size() == 1);
  CHECK(f.reported[0].tenant == "acme");
  // The book agrees with the store.
  CHECK(f.store->ledger.spent("acme", utc(2026, 12, 4), utc(2026, 12, 5)) == Approx(5.05));
}

TEST_CASE("days and months are UTC calendar periods: yesterday counts for the month only",
          "[unit][ledger]") {
  Fixture f;
  f.budgets["acme"] = {2.0, 3.0};
  f.book.save({stretch("mon", "acme", utc(2026, 12, 3, 23, 30), 1.5, true)}, utc(2026, 12, 4, 1));
  f.book.save({stretch("nov", "acme", utc(2026, 11, 30, 12), 50, true)},
              utc(2026, 12, 4, 1));  // last month
  // Today (the 4th): 0 of 2 today, 1.5 of 3 this month.
  CHECK_FALSE(f.ask("acme", utc(2026, 12, 4, 1)));
  f.book.save({stretch("tue", "acme", utc(2026, 12, 4, 2), 1.6, true)}, utc(2026, 12, 4, 2));
  auto spent = f.ask("acme", utc(2026, 12, 4, 3));
  REQUIRE(spent);
  CHECK(spent->period == PeriodKind::month);
  CHECK(spent->spent_usd == Approx(3.1));
  CHECK(spent->resets_at == utc(2027, 1, 1));
  CHECK(budget_spent_text(*spent).find("monthly budget of $3.00") != std::string::npos);
  // Another tenant is unaffected.
  f.budgets["beta"] = {2.0, 3.0};
  CHECK_FALSE(f.ask("beta", utc(2026, 12, 4, 3)));
  // A new day: the daily budget has room again (read again from the store), the month not.
  auto next_day = f.ask("acme", utc(2026, 12, 5, 0, 1));
  REQUIRE(next_day);
  CHECK(next_day->period == PeriodKind::month);
  f.budgets["acme"] = {2.0, std::nullopt};
  CHECK_FALSE(f.ask("acme", utc(2026, 12, 5, 0, 1)));
}

TEST_CASE("a final record saved twice, a save the store refused and a day gone by count once",
          "[unit][ledger]") {
  Fixture f;
  f.budgets["acme"] = {1.5, std::nullopt};
  const auto noon = utc(2026, 12, 4, 12);
  CHECK_FALSE(f.ask("acme", noon));
  // A sandbox's last record comes twice: collected once it ended, then put when its session
  // lets go of it.
  f.book.save({stretch("ended", "acme", noon, 1.0, true)}, noon);
  f.book.save({stretch("ended", "acme", noon, 1.0, true)}, noon);
  CHECK_FALSE(f.ask("acme", noon));
  // The store is out: what the batch grew counts all the same (and the crossing is reported),
  // and the same totals saved again once it is back add nothing.
  f.store->failing = true;
  CHECK_THROWS_AS(f.book.save({stretch("live", "acme", noon, 0.6)}, noon), LedgerError);
  auto spent = f.ask("acme", noon);
  REQUIRE(spent);
  CHECK(spent->spent_usd == Approx(1.6));
  REQUIRE(f.reported.size() == 1);
  f.store->failing = false;
  f.book.save({stretch("live", "acme", noon, 0.6)}, noon);
  CHECK(f.ask("acme", noon)->spent_usd == Approx(1.6));
  // Past midnight, yesterday's stretch closes: acme's totals are of yesterday, so they are read
  // again for today (nothing yet), not grown, and no budget is reported spent.
  f.reported.clear();
  const auto after_midnight = utc(2026, 12, 5, 0, 0) + seconds(30);
  f.book.save({stretch("live", "acme", noon, 0.7, true)}, after_midnight);
  CHECK(f.reported.empty());
  CHECK_FALSE(f.ask("acme", after_midnight));
}

TEST_CASE("a budget lowered by a reload applies at once", "[unit][ledger]") {
  Fixture f;
  f.budgets["acme"] = {10.0, std::nullopt};
  const auto now = utc(2026, 12, 4, 12);
  CHECK_FALSE(f.ask("acme", now));
  f.book.save({stretch("s", "acme", now, 2)}, now);
  CHECK_FALSE(f.ask("acme", now));
  f.budgets["acme"] = {1.5, std::nullopt};
  auto spent = f.ask("acme", now);
  REQUIRE(spent);
  CHECK(spent->budget_usd == Approx(1.5));
  CHECK(spent->spent_usd == Approx(2));
}

TEST_CASE("the book keeps a bounded number of tenants' totals", "[unit][ledger]") {
  auto store = std::make_shared<CountingStore>();
  BudgetBook book(store, 3);
  const Budget budget{1.0, std::nullopt};
  const auto now = utc(2026, 12, 4, 12);
  for (int i = 0; i < 3; ++i) CHECK_FALSE(book.refusal("t" + std::to_string(i), budget, now));
  CHECK(book.tenants_kept() == 3);
  // Two hours on, a fourth tenant: the three not asked about for an hour are forgotten.
  CHECK_FALSE(book.refusal("t3", budget, now + hours(2)));
  CHECK(book.tenants_kept() == 1);
  // A forgotten tenant's totals come back from the store when asked.
  book.save({stretch("x", "t0", now, 1.2, true)}, now + hours(2));
  CHECK(book.refusal("t0", budget, now + hours(2)));
}
