#pragma once
// The ledger several replicas share (--ledger postgresql://…): usage records and the tenants'
// budget reservations in PostgreSQL, through libpq. Tables are named sandgate_* so that the
// database may hold others; the schema is versioned (sandgate_schema) and migrated forward at
// start under an advisory lock, so replicas starting at once migrate it once; a newer schema,
// or sandgate_* tables that are not ours, are refused, never changed.
//
// One connection, used by one thread at a time. A connection that broke is made again on the
// next use; after a failure, uses within a second fail at once (a request waits for at most one
// connect timeout, never for a dead server again and again).
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "ledger/ledger_store.hpp"
#include "ledger/reservations.hpp"

struct pg_conn;

namespace sandgate::ledger {

// 1: usage, budget claims; 2: tool use (calls to upstream MCP servers by stretch and upstream).
constexpr int kPostgresSchemaVersion = 2;

// "postgresql://" or "postgres://": a --ledger value naming a PostgreSQL database.
bool is_postgres_url(const std::string& value);
// Why `url` cannot be used, or "": not a libpq URI, or a password in it (the password comes
// from a file, never the command line, where any local user can read it).
std::string postgres_url_refusal(const std::string& url);
// The URL without anything secret, for logs: host, port and database.
std::string postgres_url_for_log(const std::string& url);

class PostgresLedger final : public LedgerStore, public ReservationStore {
 public:
  enum class Access { read_write, read_only };
  struct Options {
    std::string url;
    std::string password;  // "" for none (peer, certificate or .pgpass authentication)
    Access access = Access::read_write;
    std::chrono::seconds connect_timeout{3};
  };
  // Connects and (read_write) migrates the schema; a reader checks it. Throws LedgerError
  // saying why not: the gateway does not start.
  explicit PostgresLedger(Options options);
  ~PostgresLedger() override;
  PostgresLedger(const PostgresLedger&) = delete;
  PostgresLedger& operator=(const PostgresLedger&) = delete;

  void save(const std::vector<UsageRecord>& records) override;
  double spent(std::string_view tenant, Clock::time_point from,
               Clock::time_point until) const override;
  std::vector<UsageRow> usage(const UsageQuery& query, Grouping grouping) const override;

  Grant reserve(const std::string& tenant, const Period& period, double chunk,
                double budget) override;
  double settle(const std::string& tenant, const Period& period, double usd) override;

 private:
  class Connection;
  // The connection, made again if it broke; throws LedgerError when it cannot be.
  Connection& connection_locked() const;
  // Runs `use` on the connection under the lock; a broken connection is dropped, and `use` run
  // once more on a fresh one when `again_if_broken`.
  template <class Use>
  auto with_connection(Use&& use, bool again_if_broken = true) const;
  void migrate(Connection& c);
  void check_schema(Connection& c) const;
  void save_tool_use(Connection& c, const UsageRecord& record);

  const Options options_;
  mutable std::mutex mutex_;
  mutable std::unique_ptr<Connection> connection_;
  mutable Clock::time_point failed_at_;
  mutable std::string failure_;
  mutable int schema_version_ = 0;  // as found at open (a reader may find an older one)
};

}  // namespace sandgate::ledger
