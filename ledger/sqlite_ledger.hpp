#pragma once
// The embedded ledger: one SQLite file in the state directory (WAL, so `sandgate usage` reads
// it while the gateway writes). Records are saved in batches, one transaction each; a batch the
// call returned from is on disk (synchronous=FULL): a SIGKILL, or a crash of the machine, loses
// nothing saved before it.
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

#include "ledger/ledger_store.hpp"
#include "ledger/usage_record.hpp"

struct sqlite3;

namespace sandgate::ledger {

// SQLite's application_id for our files: "SGLD".
constexpr int kApplicationId = 0x53474C44;
// 1: usage; 2: tool_use (calls to upstream MCP servers by stretch and upstream).
constexpr int kSchemaVersion = 2;

class SqliteLedger final : public LedgerStore {
 public:
  // read_write opens (creating if absent) the gateway's ledger; read_only one that exists, for
  // readers beside a running gateway (`sandgate usage`): it takes no lock a save would wait for
  // and never changes the file; in_memory one that is no file at all (the path is ignored),
  // gone at exit: budgets count there when nothing is to be written. Throws LedgerError saying
  // why not.
  enum class Access { read_write, read_only, in_memory };
  explicit SqliteLedger(const std::filesystem::path& path, Access access = Access::read_write);
  ~SqliteLedger() override;
  SqliteLedger(const SqliteLedger&) = delete;
  SqliteLedger& operator=(const SqliteLedger&) = delete;

  // Each record holds its stretch's latest totals: a new stretch is added, a known one's totals
  // replaced. All of them or none, in one transaction. Throws LedgerError (nothing is written).
  void save(const std::vector<UsageRecord>& records) override;
  // What `tenant` spent in records that ended in [from, until).
  double spent(std::string_view tenant, Clock::time_point from,
               Clock::time_point until) const override;
  std::vector<UsageRow> usage(const UsageQuery& query, Grouping grouping) const override;
  // Drops the records that ended before `before`: for the in-memory ledger, which only budgets
  // read (the current day and month), so that it does not grow for as long as the gateway runs.
  void forget_before(Clock::time_point before);

 private:
  void prepare_schema();
  void check_schema();  // ours, of a version this one knows (kept in schema_version_)
  void save_tool_use(const UsageRecord& record);
  std::vector<UsageRow> usage_by_upstream(const UsageQuery& query) const;
  sqlite3* db_ = nullptr;
  int schema_version_ = 0;
};

}  // namespace sandgate::ledger
