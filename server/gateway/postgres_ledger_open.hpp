#pragma once
// The PostgreSQL ledger as --ledger and --ledger-password-file name it, for the gateway and for
// `sandgate usage`.
#include <memory>

#include "ledger/ledger_config.hpp"
#include "ledger/postgres_ledger.hpp"

namespace sandgate::server {

// Throws std::runtime_error (LedgerError) saying why not: the password file cannot be read, the
// database cannot be reached or holds a schema that is not ours.
std::shared_ptr<ledger::PostgresLedger> open_postgres_ledger(const ledger::LedgerConfig& config,
                                                             ledger::PostgresLedger::Access access);

}  // namespace sandgate::server
