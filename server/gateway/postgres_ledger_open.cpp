#include "server/gateway/postgres_ledger_open.hpp"

#include <cerrno>
#include <cstring>
#include <fstream>

namespace sandgate::server {
namespace {

// The file's first line: the password, without its line end.
std::string password_from(const std::string& path) {
  std::ifstream file(path);
  if (!file.is_open())
    throw ledger::LedgerError("cannot read --ledger-password-file " + path + ": " +
                              std::strerror(errno));
  std::string line;
  std::getline(file, line);
  if (!line.empty() && line.back() == '\r') line.pop_back();
  if (line.empty())
    throw ledger::LedgerError("--ledger-password-file " + path + " holds no password");
  return line;
}

}  // namespace

std::shared_ptr<ledger::PostgresLedger> open_postgres_ledger(
    const ledger::LedgerConfig& config, ledger::PostgresLedger::Access access) {
  ledger::PostgresLedger::Options options;
  options.url = config.postgres_url;
  options.access = access;
  if (!config.postgres_password_file.empty())
    options.password = password_from(config.postgres_password_file);
  return std::make_shared<ledger::PostgresLedger>(std::move(options));
}

}  // namespace sandgate::server
