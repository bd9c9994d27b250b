#include "server/gateway/usage_ledger.hpp"

#include <atomic>
#include <filesystem>
#include <stdexcept>
#include <system_error>

#include "common/logging.hpp"
#include "ledger/sqlite_ledger.hpp"
#include "server/gateway/postgres_ledger_open.hpp"
#include "session/session_id.hpp"

namespace sandgate::server {
namespace {

// The state directory as --state-dir names it, made 0700 when missing (as the state store
// would: hibernation may be off).
void ensure_state_dir(const std::string& dir) {
  std::error_code ec;
  if (std::filesystem::create_directories(dir, ec))
    std::filesystem::permissions(dir, std::filesystem::perms::owner_all,
                                 std::filesystem::perm_options::replace, ec);
  if (ec) throw std::runtime_error("cannot make the state directory " + dir + ": " + ec.message());
}

// Where usage goes and what counts the budgets: the shared PostgreSQL ledger (with budgets
// reserved from it in chunks), a SQLite file in --state-dir, or — with --ledger off or no
// --state-dir — memory only (kept in in_memory, to be pruned).
struct LedgerBackend {
  std::shared_ptr<ledger::SqliteLedger> in_memory;
  std::shared_ptr<ledger::Budgets> budgets;
};

LedgerBackend open_backend(const Config& config) {
  std::shared_ptr<ledger::LedgerStore> store;
  LedgerBackend backend;
  if (config.ledger.kind == ledger::LedgerKind::postgres) {
    // Throws LedgerError: why not (unreachable, a password file unread, a schema not ours).
    auto shared = open_postgres_ledger(config.ledger, ledger::PostgresLedger::Access::read_write);
    log_event(LogLevel::info, "ledger_opened",
              {{"database", ledger::postgres_url_for_log(config.ledger.postgres_url)},
               {"budget_chunk_usd", config.ledger.shared.chunk_usd}});
    // Reservations on a connection of their own: a call that needs one does not wait behind a
    // save's transaction.
    auto reservations =
        open_postgres_ledger(config.ledger, ledger::PostgresLedger::Access::read_write);
    backend.budgets =
        std::make_shared<ledger::SharedBudgets>(shared, reservations, config.ledger.shared);
  } else if (config.ledger.kind == ledger::LedgerKind::off || config.state.dir.empty()) {
    log_event(LogLevel::info, "usage_not_recorded",
              {{"why", config.ledger.kind == ledger::LedgerKind::off
                           ? "--ledger off"
                           : "no --state-dir: the usage ledger lives there"},
               {"budgets", "counted in memory, from this start on"}});
    backend.in_memory =
        std::make_shared<ledger::SqliteLedger>("", ledger::SqliteLedger::Access::in_memory);
    store = backend.in_memory;
  } else {
    ensure_state_dir(config.state.dir);
    const auto path = ledger::sqlite_ledger_path(config.state.dir);
    store = std::make_shared<ledger::SqliteLedger>(path);  // throws LedgerError: why not
    log_event(LogLevel::info, "ledger_opened", {{"path", path.string()}});
  }
  if (!backend.budgets) backend.budgets = std::make_shared<ledger::BudgetBook>(store);
  return backend;
}

// Spend per tenant, for Prometheus, under labels the operator chose (the hook runs on the
// writer's thread).
void count_spend_in(Metrics& metrics, UsageLedger::SpendLabel spend_label,
                    ledger::Budgets& budgets) {
  budgets.on_growth([&metrics, spend_label](const std::string& tenant, double usd) {
    metrics.count_tenant_spend(spend_label ? spend_label(tenant) : "other", usd);
  });
}

// A save found tenants over a budget: their running sandboxes end (on the writer's thread;
// the registry outlives the writer, see stop()).
void end_sandboxes_when_spent(session::Registry& registry, ledger::Budgets& budgets) {
  budgets.on_spent([&registry](const std::vector<ledger::BudgetSpent>& spent) {
    for (const auto& s : spent) {
      std::size_t ended = registry.end_sandboxes_for_budget(s.tenant, ledger::budget_spent_text(s));
      if (ended > 0)
        log_event(LogLevel::info, "budget_spent",
                  {{"tenant", s.tenant},
                   {"period", s.period == ledger::PeriodKind::day ? "day" : "month"},
                   {"budget_usd", s.budget_usd},
                   {"spent_usd", s.spent_usd},
                   {"resets_at", ledger::utc_text(s.resets_at)},
                   {"ledger_unreachable", s.unknown},
                   {"sandboxes_ended", ended}});
    }
  });
}

// What follows each save: the metric, the pruning of an in-memory ledger, and a log line when
// saves start failing and when they recover.
std::function<void(const ledger::UsageWriter::SaveOutcome&)> after_each_save(
    Metrics& metrics, std::shared_ptr<ledger::SqliteLedger> in_memory) {
  // Failures are logged when they start and when they end, not once a second in between.
  auto failing = std::make_shared<std::atomic<bool>>(false);
  return [&metrics, failing, in_memory, pruned = ledger::Clock::time_point()](
             const ledger::UsageWriter::SaveOutcome& outcome) mutable {
    metrics.count_ledger_save(outcome.saved);
    // In memory only budgets read it: what ended before this month goes, once an hour.
    if (auto now = ledger::Clock::now(); in_memory && now - pruned > std::chrono::hours(1)) {
      pruned = now;
      try {
        in_memory->forget_before(ledger::period_of(ledger::PeriodKind::month, now).start);
      } catch (const std::exception&) {
        // Tried again in an hour; nothing depends on it but memory.
      }
    }
    if (!outcome.saved && !failing->exchange(true))
      log_event(LogLevel::error, "ledger_save_failed",
                {{"error", outcome.error}, {"records", outcome.records}});
    if (outcome.saved && failing->exchange(false))
      log_event(LogLevel::info, "ledger_save_recovered", {{"records", outcome.records}});
  };
}

}  // namespace

std::unique_ptr<UsageLedger> UsageLedger::open(const Config& config, session::Registry& registry,
                                               Metrics& metrics, SpendLabel spend_label) {
  auto backend = open_backend(config);
  auto budgets = backend.budgets;
  count_spend_in(metrics, std::move(spend_label), *budgets);
  end_sandboxes_when_spent(registry, *budgets);
  auto writer = std::make_shared<ledger::UsageWriter>(budgets, config.ledger.save_interval);
  // Owned (and so stopped) before anything can call into the registry from the writer's thread.
  std::unique_ptr<UsageLedger> opened(new UsageLedger(writer, budgets));
  // This gateway process's name in stretch keys: random (the random part of a fresh session
  // id), so that a restarted gateway, or another replica writing to the same ledger, never
  // continues another's stretches.
  registry.report_usage(
      {writer, budgets, session::new_session_id("").substr(0, 12), config.registry.replica_name});
  writer->start([&registry] { return registry.usage_records(); },
                after_each_save(metrics, backend.in_memory));
  return opened;
}

UsageLedger::~UsageLedger() {
  stop();
}

void UsageLedger::stop() {
  writer_->stop();
  // What this replica reserved of tenants' budgets and did not use goes back to the others.
  if (!released_) {
    released_ = true;
    budgets_->release();
  }
  // The last save failed too: what it held is not in the ledger, and the log says how much.
  if (std::size_t lost = writer_->pending() + writer_->dropped(); lost > 0 && !lost_told_) {
    lost_told_ = true;
    log_event(LogLevel::error, "ledger_records_lost", {{"records", lost}});
  }
}

}  // namespace sandgate::server
