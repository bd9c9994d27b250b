#include "ledger/sqlite_ledger.hpp"

#include <sqlite3.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <memory>

namespace sandgate::ledger {
namespace {

std::int64_t unix_ms(Clock::time_point at) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(at.time_since_epoch()).count();
}

// A statement, finalized whatever happens.
class Statement {
 public:
  Statement(sqlite3* db, const char* sql) : db_(db) {
    if (sqlite3_prepare_v2(db, sql, -1, &stmt_, nullptr) != SQLITE_OK)
      throw LedgerError(std::string("ledger: ") + sqlite3_errmsg(db));
  }
  ~Statement() { sqlite3_finalize(stmt_); }
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  void bind(int i, std::string_view text) {
    check(
        sqlite3_bind_text(stmt_, i, text.data(), static_cast<int>(text.size()), SQLITE_TRANSIENT));
  }
  void bind(int i, double value) { check(sqlite3_bind_double(stmt_, i, value)); }
  void bind(int i, std::int64_t value) { check(sqlite3_bind_int64(stmt_, i, value)); }
  // True while there is a row.
  bool step() {
    int rc = sqlite3_step(stmt_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    throw LedgerError(std::string("ledger: ") + sqlite3_errmsg(db_));
  }
  void reset() {
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
  }
  std::string text(int i) const {
    auto* p = reinterpret_cast<const char*>(sqlite3_column_text(stmt_, i));
    return p ? std::string(p, static_cast<std::size_t>(sqlite3_column_bytes(stmt_, i))) : "";
  }
  double real(int i) const { return sqlite3_column_double(stmt_, i); }
  std::int64_t integer(int i) const { return sqlite3_column_int64(stmt_, i); }

 private:
  void check(int rc) {
    if (rc != SQLITE_OK) throw LedgerError(std::string("ledger: ") + sqlite3_errmsg(db_));
  }
  sqlite3* db_;
  sqlite3_stmt* stmt_ = nullptr;
};

void exec(sqlite3* db, const char* sql) {
  char* error = nullptr;
  if (sqlite3_exec(db, sql, nullptr, nullptr, &error) != SQLITE_OK) {
    std::string what = error ? error : sqlite3_errmsg(db);
    sqlite3_free(error);
    throw LedgerError("ledger: " + what);
  }
}

std::int64_t pragma_number(sqlite3* db, const char* sql) {
  Statement s(db, sql);
  return s.step() ? s.integer(0) : 0;
}

// ?1 the tenant, ?2 since, ?3 until: each NULL when not asked.
void bind_query(Statement& statement, const UsageQuery& query) {
  if (query.tenant) statement.bind(1, *query.tenant);
  if (query.since) statement.bind(2, unix_ms(*query.since));
  if (query.until) statement.bind(3, unix_ms(*query.until));
}

// The rows of a usage query whose columns are a UsageRow's, in its order.
std::vector<UsageRow> rows_of(Statement& select) {
  std::vector<UsageRow> rows;
  while (select.step()) {
    UsageRow row;
    row.tenant = select.text(0);
    row.group = select.text(1);
    row.usd = select.real(2);
    row.cpu_seconds = select.real(3);
    row.gib_seconds = select.real(4);
    row.wall_seconds = select.real(5);
    row.calls = static_cast<std::uint64_t>(select.integer(6));
    row.output_bytes = static_cast<std::uint64_t>(select.integer(7));
    row.tool_calls = static_cast<std::uint64_t>(select.integer(8));
    rows.push_back(std::move(row));
  }
  return rows;
}

constexpr const char* kSchemaV1 = R"sql(
CREATE TABLE usage (
  id INTEGER PRIMARY KEY,
  stretch TEXT NOT NULL UNIQUE,
  tenant TEXT NOT NULL,
  owner TEXT NOT NULL,
  owner_kind TEXT NOT NULL,
  replica TEXT NOT NULL,
  started_ms INTEGER NOT NULL,
  ended_ms INTEGER NOT NULL,
  cpu_seconds REAL NOT NULL,
  gib_seconds REAL NOT NULL,
  wall_seconds REAL NOT NULL,
  calls INTEGER NOT NULL,
  output_bytes INTEGER NOT NULL,
  usd_per_vcpu_hour REAL NOT NULL,
  usd_per_gib_hour REAL NOT NULL,
  usd REAL NOT NULL
);
CREATE INDEX usage_by_tenant_and_end ON usage (tenant, ended_ms);
)sql";

// Version 2 (issue #45): each stretch's calls to upstream MCP servers, by upstream.
constexpr const char* kSchemaV2 = R"sql(
CREATE TABLE tool_use (
  stretch TEXT NOT NULL,
  upstream TEXT NOT NULL,
  calls INTEGER NOT NULL,
  usd REAL NOT NULL,
  PRIMARY KEY (stretch, upstream)
) WITHOUT ROWID;
)sql";

}  // namespace

namespace {

// What a file already there is, judged from its first 100 bytes before SQLite opens it: SQLite
// would otherwise roll back a leftover journal or add -wal/-shm files beside another program's
// database, changing what is not ours. "": ours (or empty, or absent); else why not.
std::string refusal_of_existing(const std::filesystem::path& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec) || std::filesystem::file_size(path, ec) == 0) return "";
  std::ifstream file(path, std::ios::binary);
  if (!file.is_open()) return "it cannot be read (" + std::string(std::strerror(errno)) + ")";
  unsigned char header[100] = {};
  if (!file.read(reinterpret_cast<char*>(header), sizeof header))
    return "it is not an SQLite database";
  if (std::memcmp(header, "SQLite format 3", 16) != 0) return "it is not an SQLite database";
  auto big_endian = [&](int at) {
    return static_cast<std::uint32_t>(header[at]) << 24 |
           static_cast<std::uint32_t>(header[at + 1]) << 16 |
           static_cast<std::uint32_t>(header[at + 2]) << 8 | header[at + 3];
  };
  if (big_endian(68) != static_cast<std::uint32_t>(kApplicationId))
    return "it is another program's SQLite database, not a sandgate ledger";
  if (big_endian(60) > static_cast<std::uint32_t>(kSchemaVersion))
    return "it was written by a newer sandgate (schema " + std::to_string(big_endian(60)) +
           ", this one knows " + std::to_string(kSchemaVersion) + ")";
  return "";
}

}  // namespace

SqliteLedger::SqliteLedger(const std::filesystem::path& given, Access access) {
  // Absolute: a relative name starting "file:" would be read as an SQLite URI.
  const auto path = access == Access::in_memory ? std::filesystem::path(":memory:")
                                                : std::filesystem::absolute(given);
  if (access != Access::in_memory)
    if (auto refusal = refusal_of_existing(path); !refusal.empty())
      throw LedgerError("the ledger " + path.string() + " is not usable: " + refusal);
  // One connection, serialized by SQLite itself: the gateway's threads may share it.
  const int mode = access == Access::read_only ? SQLITE_OPEN_READONLY
                                               : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE;
  int rc = sqlite3_open_v2(path.c_str(), &db_, mode | SQLITE_OPEN_FULLMUTEX, nullptr);
  if (rc != SQLITE_OK) {
    std::string what = db_ ? sqlite3_errmsg(db_) : "out of memory";
    sqlite3_close_v2(db_);
    db_ = nullptr;
    throw LedgerError("cannot open the ledger " + path.string() + ": " + what);
  }
  try {
    sqlite3_busy_timeout(db_, 5000);
    if (access == Access::read_only)
      check_schema();
    else
      prepare_schema();
  } catch (const std::exception& e) {
    sqlite3_close_v2(db_);
    db_ = nullptr;
    throw LedgerError("the ledger " + path.string() + " is not usable: " + e.what());
  }
}

SqliteLedger::~SqliteLedger() {
  sqlite3_close_v2(db_);
}

void SqliteLedger::check_schema() {
  if (pragma_number(db_, "PRAGMA application_id") != kApplicationId)
    throw LedgerError("it is another program's SQLite database, not a sandgate ledger");
  std::int64_t version = pragma_number(db_, "PRAGMA user_version");
  if (version > kSchemaVersion)
    throw LedgerError("it was written by a newer sandgate (schema " + std::to_string(version) +
                      ", this one knows " + std::to_string(kSchemaVersion) + ")");
  if (version < 1) throw LedgerError("its schema version is missing");
  schema_version_ = static_cast<int>(version);
}

void SqliteLedger::prepare_schema() {
  // Made once, under the write lock: a second process opening the same new file at the same
  // time finds the schema made when its turn comes, and makes nothing. Made before WAL is on,
  // so that the file's own header says "sandgate ledger" at once: in WAL mode the schema would
  // sit in the -wal file until a checkpoint, and the header check of a second opener (`sandgate
  // usage` beside a running gateway) would take the new ledger for another program's.
  exec(db_, "BEGIN IMMEDIATE");
  try {
    std::int64_t application = pragma_number(db_, "PRAGMA application_id");
    std::int64_t objects = pragma_number(db_, "SELECT count(*) FROM sqlite_schema");
    if (application == 0 && objects == 0) {
      exec(db_, kSchemaV1);
      exec(db_, ("PRAGMA application_id=" + std::to_string(kApplicationId)).c_str());
      exec(db_, "PRAGMA user_version=1");
    }
    check_schema();
    // Forward, one version at a time, in the same transaction: all of it or none.
    if (schema_version_ < 2) exec(db_, kSchemaV2);
    if (schema_version_ < kSchemaVersion) {
      exec(db_, ("PRAGMA user_version=" + std::to_string(kSchemaVersion)).c_str());
      schema_version_ = kSchemaVersion;
    }
    exec(db_, "COMMIT");
  } catch (...) {
    sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
    throw;
  }
  exec(db_, "PRAGMA journal_mode=WAL");
  exec(db_, "PRAGMA synchronous=FULL");
}

void SqliteLedger::save(const std::vector<UsageRecord>& records) {
  if (records.empty()) return;
  exec(db_, "BEGIN IMMEDIATE");
  try {
    // A stretch's totals only grow: the latest replaces what was saved before, whoever it was
    // for (tenant, owner and start never change within a stretch).
    Statement upsert(db_,
                     "INSERT INTO usage (stretch, tenant, owner, owner_kind, replica, started_ms, "
                     "ended_ms, cpu_seconds, gib_seconds, wall_seconds, calls, output_bytes, "
                     "usd_per_vcpu_hour, usd_per_gib_hour, usd) "
                     "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15) "
                     "ON CONFLICT (stretch) DO UPDATE SET ended_ms = excluded.ended_ms, "
                     "cpu_seconds = excluded.cpu_seconds, gib_seconds = excluded.gib_seconds, "
                     "wall_seconds = excluded.wall_seconds, calls = excluded.calls, "
                     "output_bytes = excluded.output_bytes, usd = excluded.usd");
    for (const auto& r : records) {
      upsert.bind(1, r.stretch);
      upsert.bind(2, r.tenant);
      upsert.bind(3, r.owner);
      upsert.bind(4, r.owner_kind);
      upsert.bind(5, r.replica);
      upsert.bind(6, unix_ms(r.started));
      upsert.bind(7, unix_ms(r.ended));
      upsert.bind(8, r.cpu_seconds);
      upsert.bind(9, r.gib_seconds);
      upsert.bind(10, r.wall_seconds);
      upsert.bind(11, static_cast<std::int64_t>(r.calls));
      upsert.bind(12, static_cast<std::int64_t>(r.output_bytes));
      upsert.bind(13, r.usd_per_vcpu_hour);
      upsert.bind(14, r.usd_per_gib_hour);
      upsert.bind(15, r.usd);
      upsert.step();
      upsert.reset();
      save_tool_use(r);
    }
    exec(db_, "COMMIT");
  } catch (...) {
    sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
    throw;
  }
}

void SqliteLedger::save_tool_use(const UsageRecord& r) {
  if (r.tool_use.empty()) return;
  // Like the stretch's own totals: the latest per upstream replaces what was saved before.
  Statement upsert(db_,
                   "INSERT INTO tool_use (stretch, upstream, calls, usd) VALUES (?1, ?2, ?3, ?4) "
                   "ON CONFLICT (stretch, upstream) DO UPDATE SET calls = excluded.calls, "
                   "usd = excluded.usd");
  for (const auto& [upstream, use] : r.tool_use) {
    upsert.bind(1, r.stretch);
    upsert.bind(2, upstream);
    upsert.bind(3, static_cast<std::int64_t>(use.calls));
    upsert.bind(4, use.usd);
    upsert.step();
    upsert.reset();
  }
}

double SqliteLedger::spent(std::string_view tenant, Clock::time_point from,
                           Clock::time_point until) const {
  Statement sum(db_,
                "SELECT total(usd) FROM usage WHERE tenant = ?1 AND ended_ms >= ?2 AND "
                "ended_ms < ?3");
  sum.bind(1, tenant);
  sum.bind(2, unix_ms(from));
  sum.bind(3, unix_ms(until));
  return sum.step() ? sum.real(0) : 0;
}

void SqliteLedger::forget_before(Clock::time_point before) {
  Statement drop_tools(db_,
                       "DELETE FROM tool_use WHERE stretch IN (SELECT stretch FROM usage WHERE "
                       "ended_ms < ?1)");
  drop_tools.bind(1, unix_ms(before));
  drop_tools.step();
  Statement drop(db_, "DELETE FROM usage WHERE ended_ms < ?1");
  drop.bind(1, unix_ms(before));
  drop.step();
}

std::vector<UsageRow> SqliteLedger::usage(const UsageQuery& query, Grouping grouping) const {
  if (grouping == Grouping::upstream) return usage_by_upstream(query);
  // The group is a fixed expression per grouping, never text from the query.
  const char* group = grouping == Grouping::day
                          ? "strftime('%Y-%m-%d', ended_ms / 1000, 'unixepoch')"
                      : grouping == Grouping::owner ? "owner_kind || ':' || owner"
                                                    : "''";
  // A ledger of schema 1 (read beside an older gateway) has no tool calls to count.
  const char* tool_calls =
      schema_version_ >= 2
          ? "sum(coalesce((SELECT sum(t.calls) FROM tool_use t WHERE t.stretch = usage.stretch), "
            "0))"
          : "0";
  std::string sql = std::string("SELECT tenant, ") + group +
                    " AS grp, total(usd), total(cpu_seconds), total(gib_seconds), "
                    "total(wall_seconds), sum(calls), sum(output_bytes), " +
                    tool_calls +
                    " FROM usage WHERE (?1 IS NULL OR tenant = ?1) AND (?2 IS NULL OR ended_ms >= "
                    "?2) AND (?3 IS NULL OR ended_ms < ?3) GROUP BY tenant, grp ORDER BY tenant, "
                    "grp";
  Statement select(db_, sql.c_str());
  bind_query(select, query);
  return rows_of(select);
}

std::vector<UsageRow> SqliteLedger::usage_by_upstream(const UsageQuery& query) const {
  if (schema_version_ < 2) return {};
  // The calls and their prices; the sandboxes' other totals are not the upstream's.
  Statement select(db_,
                   "SELECT u.tenant, t.upstream, total(t.usd), 0, 0, 0, 0, 0, sum(t.calls) FROM "
                   "tool_use t JOIN usage u ON u.stretch = t.stretch WHERE (?1 IS NULL OR u.tenant "
                   "= ?1) AND (?2 IS NULL OR u.ended_ms >= ?2) AND (?3 IS NULL OR u.ended_ms < ?3) "
                   "GROUP BY u.tenant, t.upstream ORDER BY u.tenant, t.upstream");
  bind_query(select, query);
  return rows_of(select);
}

}  // namespace sandgate::ledger
