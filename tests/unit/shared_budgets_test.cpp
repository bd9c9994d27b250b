// Budgets across replicas on their own (issue #28): the replica's side of the reservations —
// calls within a reservation ask nothing, a used-up one asks for a chunk, a budget with no more
// refuses, saves reserve ahead at the sandboxes' pace, settle use past the reservation and stop
// the tenant while a forecast of its pace is still held, quiet tenants give back, and a database
// that cannot be reached refuses only what needs it. The database's side (one atomic statement,
// never past the budget) is tested on a real PostgreSQL (integration/postgres_ledger_test); here
// an in-memory store keeps the same contract for one tenant period at a time.
#include "ledger/shared_budgets.hpp"

#include <catch2/catch.hpp>
#include <map>

#include "ledger/sqlite_ledger.hpp"

using namespace sandgate::ledger;
using namespace std::chrono;

namespace {

Clock::time_point utc(int y, unsigned m, unsigned d, int hh = 0, int mm = 0, int ss = 0) {
  return sys_days{year{y} / month{m} / day{d}} + hours(hh) + minutes(mm) + seconds(ss);
}

UsageRecord stretch(const std::string& key, const std::string& tenant, Clock::time_point started,
                    double usd) {
  UsageRecord r;
  r.stretch = key;
  r.tenant = tenant;
  r.owner = "0a1b2c3d";
  r.owner_kind = "session";
  r.started = started;
  r.ended = started + seconds(1);
  r.usd = usd;
  return r;
}

// The claims of every tenant period, as sandgate_reserve and settle keep them.
struct Claims final : ReservationStore {
  std::map<std::pair<std::string, Clock::time_point>, double> claimed;
  int reserves = 0, settles = 0;
  bool down = false;
  Grant reserve(const std::string& tenant, const Period& period, double chunk,
                double budget) override {
    ++reserves;
    if (down) throw LedgerError("cannot connect to the ledger database");
    double& c = claimed[{tenant, period.start}];
    double granted = std::max(0.0, std::min(chunk, budget - c));
    c += granted;
    return {granted, c};
  }
  double settle(const std::string& tenant, const Period& period, double usd) override {
    ++settles;
    if (down) throw LedgerError("cannot connect to the ledger database");
    double& c = claimed[{tenant, period.start}];
    c = std::max(0.0, c + usd);
    return c;
  }
  double of(const std::string& tenant, Clock::time_point at) {
    return claimed[{tenant, period_of(PeriodKind::day, at).start}];
  }
};

struct Replica {
  std::shared_ptr<SqliteLedger> store =
      std::make_shared<SqliteLedger>("", SqliteLedger::Access::in_memory);
  std::shared_ptr<Claims> claims;
  std::vector<BudgetSpent> reported;
  double day_budget;  // acme's; other tenants have none
  SharedBudgets budgets;
  // What a call of `t` asks, with its budget as its terms say.
  std::optional<BudgetSpent> ask(const std::string& t, Clock::time_point now) {
    return budgets.refusal(t, t == "acme" ? Budget{day_budget, std::nullopt} : Budget{}, now);
  }
  Replica(std::shared_ptr<Claims> shared, double acme_day_budget, SharedBudgetOptions options = {})
      : claims(shared), day_budget(acme_day_budget), budgets(store, shared, options) {
    budgets.on_spent([this](const std::vector<BudgetSpent>& spent) {
      reported.insert(reported.end(), spent.begin(), spent.end());
    });
  }
};

SharedBudgetOptions chunk_of(double usd) {
  SharedBudgetOptions o;
  o.chunk_usd = usd;
  return o;
}

}  // namespace

TEST_CASE("calls within a replica's reservation ask the database nothing", "[unit][ledger]") {
  auto claims = std::make_shared<Claims>();
  Replica r(claims, 5.0, chunk_of(1.0));
  const auto t = utc(2026, 12, 5, 10);
  CHECK_FALSE(r.ask("acme", t));
  CHECK(claims->reserves == 1);
  for (int i = 0; i < 100; ++i) CHECK_FALSE(r.ask("acme", t + seconds(i)));
  CHECK(claims->reserves == 1);
  // A tenant without a budget never asks.
  CHECK_FALSE(r.ask("free", t));
  CHECK(claims->reserves == 1);
  // Use below half a chunk left: the save reserves the next chunk, not the next call.
  r.budgets.save({stretch("s1", "acme", t, 0.6)}, t + seconds(1));
  CHECK(claims->reserves == 2);
  auto share = r.budgets.share_of("acme", PeriodKind::day, t);
  CHECK(share.used == Approx(0.6));
  // Ahead by a chunk, or by two save intervals of the pace if more: $1.20.
  CHECK(share.reserved == Approx(2.2));
  CHECK(claims->of("acme", t) == Approx(2.2));
}

TEST_CASE(
    "replicas share one budget: the claims never pass it, and a replica with nothing "
    "left stops its tenant",
    "[unit][ledger]") {
  auto claims = std::make_shared<Claims>();
  Replica one(claims, 2.0, chunk_of(0.5)), two(claims, 2.0, chunk_of(0.5));
  auto t = utc(2026, 12, 5, 10);
  CHECK_FALSE(one.ask("acme", t));
  CHECK_FALSE(two.ask("acme", t));
  // Each replica's sandboxes use $0.10 a second; saves every second reserve ahead.
  for (int s = 1; s <= 30 && (one.reported.empty() || two.reported.empty()); ++s) {
    one.budgets.save({stretch("one", "acme", t, 0.1 * s)}, t + seconds(s));
    two.budgets.save({stretch("two", "acme", t, 0.1 * s)}, t + seconds(s));
    CHECK(claims->of("acme", t) <= 2.0 + 1e-9);
  }
  REQUIRE(one.reported.size() == 1);
  REQUIRE(two.reported.size() == 1);
  CHECK(one.reported[0].budget_usd == 2.0);
  CHECK(one.reported[0].resets_at == utc(2026, 12, 6));
  // Stopped while each still held two seconds of its pace or less: spent ≤ the budget.
  double used = one.budgets.share_of("acme", PeriodKind::day, t).used +
                two.budgets.share_of("acme", PeriodKind::day, t).used;
  CHECK(used <= 2.0);
  CHECK(used >= 2.0 - 2 * 2 * 0.1 - 1e-9);
  // New calls on either replica are refused, saying which budget and when it resets.
  auto spent = one.ask("acme", t + seconds(40));
  REQUIRE(spent);
  CHECK(spent->period == PeriodKind::day);
  CHECK(budget_spent_text(*spent).find("daily budget of $2.00 is spent") != std::string::npos);
  CHECK(two.ask("acme", t + seconds(40)));
  // Refused again at once without a round trip; asked again a second later.
  int asked = claims->reserves;
  CHECK(one.ask("acme", t + seconds(40) + milliseconds(500)));
  CHECK(claims->reserves == asked);
  // Quiet for 5 s, both give back what they held unused; the claims are then what was used,
  // and a call may run on what came back.
  one.budgets.save({}, t + seconds(50));
  two.budgets.save({}, t + seconds(50));
  CHECK(claims->of("acme", t) == Approx(used));
  CHECK_FALSE(one.ask("acme", t + seconds(51)));
  // The next day starts afresh.
  CHECK_FALSE(two.ask("acme", utc(2026, 12, 6, 0, 0, 1)));
}

TEST_CASE("use past a reservation is claimed all the same, and stops the tenant",
          "[unit][ledger]") {
  auto claims = std::make_shared<Claims>();
  Replica r(claims, 1.0, chunk_of(0.25));
  auto t = utc(2026, 12, 5, 10);
  CHECK_FALSE(r.ask("acme", t));
  // A burst: $1.40 used before the first save saw any of it.
  r.budgets.save({stretch("s1", "acme", t, 1.4)}, t + seconds(1));
  REQUIRE(r.reported.size() == 1);
  CHECK(r.reported[0].spent_usd == Approx(1.4));
  CHECK(claims->of("acme", t) == Approx(1.4));
  CHECK(r.ask("acme", t + seconds(2)));
  // The same totals again (a final record comes twice) add nothing.
  r.budgets.save({stretch("s1", "acme", t, 1.4)}, t + seconds(3));
  CHECK(claims->of("acme", t) == Approx(1.4));
}

TEST_CASE("an unreachable database refuses only calls that need a new reservation",
          "[unit][ledger]") {
  auto claims = std::make_shared<Claims>();
  Replica r(claims, 5.0, chunk_of(1.0));
  auto t = utc(2026, 12, 5, 10);
  CHECK_FALSE(r.ask("acme", t));
  claims->down = true;
  // Within the reservation: runs.
  CHECK_FALSE(r.ask("acme", t + seconds(1)));
  // Saves go on counting; once the sandboxes have used all this replica reserved, they are
  // ended: the budget cannot be checked (an outage must not let a running loop spend on).
  r.budgets.save({stretch("s1", "acme", t, 1.2)}, t + seconds(2));
  REQUIRE(r.reported.size() == 1);
  CHECK(r.reported[0].unknown);
  CHECK(budget_spent_text(r.reported[0]).find("cannot be checked right now") != std::string::npos);
  // Used up: a call needs the database — refused (throws, the call's error says try again).
  CHECK_THROWS_AS(r.ask("acme", t + seconds(3)), LedgerError);
  // Allowed instead when so configured — but never for a tenant already stopped at its budget.
  SharedBudgetOptions open = chunk_of(1.0);
  open.allow_when_unreachable = true;
  Replica lenient(claims, 5.0, open);
  CHECK_FALSE(lenient.ask("acme", t + seconds(3)));
  auto own = std::make_shared<Claims>();
  Replica spent(own, 0.5, open);
  CHECK_FALSE(spent.ask("acme", t));
  spent.budgets.save({stretch("s9", "acme", t, 0.6)}, t + seconds(1));
  REQUIRE(spent.reported.size() == 1);
  own->down = true;
  CHECK_THROWS_AS(spent.ask("acme", t + seconds(5)), LedgerError);
  // Back: the next save settles the use past the reservation and reserves ahead.
  claims->down = false;
  r.budgets.save({stretch("s1", "acme", t, 1.3)}, t + seconds(4));
  CHECK(claims->of("acme", t) >= 1.3);
  CHECK_FALSE(r.ask("acme", t + seconds(5)));
  // Shutdown gives back what was not used.
  r.budgets.release(t + seconds(6));
  CHECK(claims->of("acme", t) == Approx(1.3));
}

TEST_CASE("a budgeted tenant's use is claimed before it asks on this replica, from nothing",
          "[unit][ledger]") {
  auto claims = std::make_shared<Claims>();
  Replica r(claims, 5.0, chunk_of(1.0));
  // A sandbox alive across midnight: its call asked yesterday (its budget came with it), and
  // today's stretch is saved before any call asked today.
  const auto t = utc(2026, 12, 5, 0, 0, 1);
  CHECK_FALSE(r.ask("acme", t - std::chrono::hours(2)));
  r.budgets.save({stretch("s1", "acme", t, 0.7)}, t + seconds(1));
  CHECK(claims->of("acme", t) >= 0.7);
  CHECK(r.budgets.share_of("acme", PeriodKind::day, t).used == Approx(0.7));
  // A tenant without a budget claims nothing.
  r.budgets.save({stretch("s2", "free", t, 3.0)}, t + seconds(2));
  CHECK(claims->of("free", t) == 0);
  // A save that read the clock before a request moved the tenant on does not move it back.
  CHECK_FALSE(r.ask("acme", utc(2026, 12, 6, 0, 0, 1)));
  r.budgets.save({stretch("s1", "acme", t, 0.8)}, t + seconds(3));
  CHECK(r.budgets.share_of("acme", PeriodKind::day, utc(2026, 12, 6, 0, 0, 2)).reserved ==
        Approx(1.0));
}
