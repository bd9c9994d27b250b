#pragma once
// The embedded ledger: one SQLite file in the state directory (WAL, so `sandgate usage` reads
// it while the gateway writes). Records are appended in batches, one transaction each; a batch
// the call returned from is on disk (synchronous=FULL): a SIGKILL, or a crash of the machine,
// loses nothing appended before it.
//
// The file is ours or it is refused, never replaced: its SQLite `application_id` says
// "sandgate ledger" and its `user_version` the schema (migrated forward at open; a newer one
// is refused). A file that is not SQLite, or another program's database, stops the open with
// a message saying so.
#include <filesystem>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "ledger/usage_record.hpp"

struct sqlite3;

namespace sandgate::ledger {

struct LedgerError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// SQLite's application_id for our files: "SGLD".
constexpr int kApplicationId = 0x53474C44;
constexpr int kSchemaVersion = 1;

struct UsageQuery {
  std::optional<std::string> tenant;
  std::optional<Clock::time_point> since;  // records that ended at or after
  std::optional<Clock::time_point> until;  // records that ended before
};

enum class Grouping { tenant, day, owner };

struct UsageRow {
  std::string tenant;
  std::string group;  // the UTC day ("2026-12-04") or the owner, by the grouping; "" for tenant
  double usd = 0;
  double cpu_seconds = 0;
  double gib_seconds = 0;
  double wall_seconds = 0;
  std::uint64_t calls = 0;
  std::uint64_t output_bytes = 0;
};

class SqliteLedger {
 public:
  // Opens (creating if absent) the ledger at `path`. Throws LedgerError saying why not.
  explicit SqliteLedger(const std::filesystem::path& path);
  ~SqliteLedger();
  SqliteLedger(const SqliteLedger&) = delete;
  SqliteLedger& operator=(const SqliteLedger&) = delete;

  // All of them or none, in one transaction. Throws LedgerError (the batch is not written).
  void append(const std::vector<UsageRecord>& records);
  // What `tenant` spent in records that ended in [from, until).
  double spent(std::string_view tenant, Clock::time_point from, Clock::time_point until) const;
  // Totals by tenant, and by UTC day or owner when asked, ordered by tenant then group.
  std::vector<UsageRow> usage(const UsageQuery& query, Grouping grouping) const;

 private:
  void prepare_schema();
  sqlite3* db_ = nullptr;
};

}  // namespace sandgate::ledger
