#pragma once
// Where the gateway keeps its usage ledger (--ledger): the embedded SQLite file in --state-dir
// (the default; nothing is written without a --state-dir), a PostgreSQL database several
// replicas share, or nowhere; and the tenants' default budgets.
#include <chrono>
#include <filesystem>
#include <string>

#include "ledger/budget_book.hpp"
#include "ledger/shared_budgets.hpp"

namespace sandgate::ledger {

enum class LedgerKind { sqlite, postgres, off };

struct LedgerConfig {
  LedgerKind kind = LedgerKind::sqlite;
  std::string postgres_url;            // for LedgerKind::postgres; never holds a password
  std::string postgres_password_file;  // "" for none
  // How replicas sharing the PostgreSQL ledger reserve tenants' budgets.
  SharedBudgetOptions shared;
  // How often live sandboxes' totals are saved: the most a SIGKILL of the gateway can lose.
  std::chrono::milliseconds save_interval{1000};

  bool operator==(const LedgerConfig&) const = default;
};

// The embedded ledger's file in a state directory.
inline std::filesystem::path sqlite_ledger_path(const std::string& state_dir) {
  return std::filesystem::path(state_dir) / "ledger.sqlite";
}

}  // namespace sandgate::ledger
