#include "ledger/postgres_ledger.hpp"

#include <libpq-fe.h>

#include <cstdio>
#include <optional>
#include <utility>

namespace sandgate::ledger {
namespace {

using Param = std::optional<std::string>;

std::string number(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.17g", value);  // read back exactly
  return text;
}

std::string ms(Clock::time_point at) {
  return std::to_string(
      std::chrono::duration_cast<std::chrono::milliseconds>(at.time_since_epoch()).count());
}

const char* kind_name(PeriodKind kind) {
  return kind == PeriodKind::day ? "day" : "month";
}

// Any one key's value in a libpq connection string or URI; nullopt when it does not parse.
std::optional<std::vector<std::pair<std::string, std::string>>> conninfo_of(
    const std::string& url) {
  char* error = nullptr;
  PQconninfoOption* options = PQconninfoParse(url.c_str(), &error);
  if (!options) {
    PQfreemem(error);
    return std::nullopt;
  }
  std::vector<std::pair<std::string, std::string>> values;
  for (auto* o = options; o->keyword; ++o)
    if (o->val && *o->val) values.emplace_back(o->keyword, o->val);
  PQconninfoFree(options);
  return values;
}

// Advisory lock key for migrations: "sandgate" in ASCII, so no other program's lock is taken.
constexpr const char* kMigrationLock = "8314047764612871269";

// Schema versions, in order: version N is kMigrations[N - 1]. Never edit one that shipped; add.
constexpr const char* kMigrations[] = {
    R"sql(
CREATE TABLE sandgate_usage (
  stretch TEXT PRIMARY KEY,
  tenant TEXT NOT NULL,
  owner TEXT NOT NULL,
  owner_kind TEXT NOT NULL,
  replica TEXT NOT NULL,
  started_ms BIGINT NOT NULL,
  ended_ms BIGINT NOT NULL,
  cpu_seconds DOUBLE PRECISION NOT NULL,
  gib_seconds DOUBLE PRECISION NOT NULL,
  wall_seconds DOUBLE PRECISION NOT NULL,
  calls BIGINT NOT NULL,
  output_bytes BIGINT NOT NULL,
  usd_per_vcpu_hour DOUBLE PRECISION NOT NULL,
  usd_per_gib_hour DOUBLE PRECISION NOT NULL,
  usd DOUBLE PRECISION NOT NULL
);
CREATE INDEX sandgate_usage_by_tenant_and_end ON sandgate_usage (tenant, ended_ms);
-- What replicas claimed of each tenant's budget period: reserved, or used past a reservation.
CREATE TABLE sandgate_budget_claims (
  tenant TEXT NOT NULL,
  period_kind TEXT NOT NULL,
  period_start_ms BIGINT NOT NULL,
  claimed_usd DOUBLE PRECISION NOT NULL,
  PRIMARY KEY (tenant, period_kind, period_start_ms)
);
-- One reservation, atomically: the period's row (made at nothing claimed: every replica claims
-- what its own sandboxes use), locked, then grown by what fits under the budget.
CREATE FUNCTION sandgate_reserve(p_tenant TEXT, p_kind TEXT, p_start BIGINT,
                                 p_chunk DOUBLE PRECISION, p_budget DOUBLE PRECISION,
                                 OUT granted DOUBLE PRECISION, OUT claimed DOUBLE PRECISION)
LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO sandgate_budget_claims (tenant, period_kind, period_start_ms, claimed_usd)
    VALUES (p_tenant, p_kind, p_start, 0)
  ON CONFLICT DO NOTHING;
  SELECT c.claimed_usd INTO claimed FROM sandgate_budget_claims c
   WHERE c.tenant = p_tenant AND c.period_kind = p_kind AND c.period_start_ms = p_start
   FOR UPDATE;
  granted := GREATEST(0, LEAST(p_chunk, p_budget - claimed));
  IF granted > 0 THEN
    UPDATE sandgate_budget_claims c SET claimed_usd = c.claimed_usd + granted
     WHERE c.tenant = p_tenant AND c.period_kind = p_kind AND c.period_start_ms = p_start;
    claimed := claimed + granted;
  END IF;
END
$$;
CREATE TABLE sandgate_schema (version INTEGER NOT NULL);
)sql",
    // 2 (issue #45): each stretch's calls to upstream MCP servers, by upstream.
    R"sql(
CREATE TABLE sandgate_tool_use (
  stretch TEXT NOT NULL,
  upstream TEXT NOT NULL,
  calls BIGINT NOT NULL,
  usd DOUBLE PRECISION NOT NULL,
  PRIMARY KEY (stretch, upstream)
);
)sql",
};
static_assert(std::size(kMigrations) == kPostgresSchemaVersion);

}  // namespace

bool is_postgres_url(const std::string& value) {
  return value.rfind("postgresql://", 0) == 0 || value.rfind("postgres://", 0) == 0;
}

std::string postgres_url_refusal(const std::string& url) {
  auto values = conninfo_of(url);
  if (!values) return "it is not a PostgreSQL connection URI";
  for (const auto& [key, value] : *values)
    if (key == "password" || key == "sslpassword")
      return "it carries a " + key +
             ": give the password in --ledger-password-file instead (a command line is readable "
             "by every local user)";
  return "";
}

std::string postgres_url_for_log(const std::string& url) {
  auto values = conninfo_of(url);
  if (!values) return "postgresql://(unparsable)";
  std::string host = "localhost", port, db;
  for (const auto& [key, value] : *values) {
    if (key == "host") host = value;
    if (key == "port") port = ":" + value;
    if (key == "dbname") db = value;
  }
  return "postgresql://" + host + port + "/" + db;
}

// One libpq connection and the statements the ledger runs on it.
class PostgresLedger::Connection {
 public:
  struct Result {
    PGresult* r;
    explicit Result(PGresult* result) : r(result) {}
    Result(Result&& other) noexcept : r(std::exchange(other.r, nullptr)) {}
    Result(const Result&) = delete;
    Result& operator=(const Result&) = delete;
    Result& operator=(Result&&) = delete;
    ~Result() { PQclear(r); }
    int rows() const { return PQntuples(r); }
    std::string text(int row, int col) const { return PQgetvalue(r, row, col); }
    bool null(int row, int col) const { return PQgetisnull(r, row, col) != 0; }
    double real(int row, int col) const { return null(row, col) ? 0 : std::stod(text(row, col)); }
    std::int64_t integer(int row, int col) const {
      return null(row, col) ? 0 : std::stoll(text(row, col));
    }
  };

  explicit Connection(const Options& options) {
    // Our defaults first: the URL's own values (expanded from dbname) override them; the
    // password, never in the URL, comes last.
    std::string timeout = std::to_string(options.connect_timeout.count());
    std::vector<const char*> keys = {"connect_timeout",
                                     "application_name",
                                     "keepalives",
                                     "keepalives_idle",
                                     "keepalives_interval",
                                     "keepalives_count",
                                     "tcp_user_timeout",
                                     "options",
                                     "dbname"};
    std::vector<const char*> values = {
        timeout.c_str(),    "sandgate", "1", "5", "2", "2", "10000", "-c statement_timeout=10000",
        options.url.c_str()};
    if (!options.password.empty()) {
      keys.push_back("password");
      values.push_back(options.password.c_str());
    }
    keys.push_back(nullptr);
    values.push_back(nullptr);
    conn_ = PQconnectdbParams(keys.data(), values.data(), 1);
    if (!conn_ || PQstatus(conn_) != CONNECTION_OK) {
      std::string why = conn_ ? PQerrorMessage(conn_) : "out of memory";
      PQfinish(conn_);
      conn_ = nullptr;
      while (!why.empty() && (why.back() == '\n' || why.back() == ' ')) why.pop_back();
      throw LedgerError("cannot connect to the ledger database " +
                        postgres_url_for_log(options.url) + ": " + why);
    }
  }
  ~Connection() { PQfinish(conn_); }
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  bool broken() const { return PQstatus(conn_) != CONNECTION_OK; }

  Result exec(const char* sql, const std::vector<Param>& params = {}) {
    std::vector<const char*> values;
    values.reserve(params.size());
    for (const auto& p : params) values.push_back(p ? p->c_str() : nullptr);
    Result result{PQexecParams(conn_, sql, static_cast<int>(values.size()), nullptr, values.data(),
                               nullptr, nullptr, 0)};
    auto status = PQresultStatus(result.r);
    if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK) {
      std::string why = result.r ? PQresultErrorMessage(result.r) : PQerrorMessage(conn_);
      while (!why.empty() && (why.back() == '\n' || why.back() == ' ')) why.pop_back();
      throw LedgerError("ledger database: " + why);
    }
    return result;
  }

  // Several statements, no parameters (a migration).
  void exec_script(const char* sql) {
    Result result(PQexec(conn_, sql));
    auto status = PQresultStatus(result.r);
    if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK) {
      std::string why = result.r ? PQresultErrorMessage(result.r) : PQerrorMessage(conn_);
      while (!why.empty() && (why.back() == '\n' || why.back() == ' ')) why.pop_back();
      throw LedgerError("ledger database: " + why);
    }
  }

  // `work` in one transaction: committed, or rolled back and rethrown.
  template <class Work>
  void transaction(Work&& work) {
    exec("BEGIN");
    try {
      work();
      exec("COMMIT");
    } catch (...) {
      if (!broken()) PQclear(PQexec(conn_, "ROLLBACK"));
      throw;
    }
  }

 private:
  PGconn* conn_ = nullptr;
};

PostgresLedger::PostgresLedger(Options options) : options_(std::move(options)) {
  if (auto refusal = postgres_url_refusal(options_.url); !refusal.empty())
    throw LedgerError("the ledger URL cannot be used: " + refusal);
  std::lock_guard lock(mutex_);
  Connection& c = connection_locked();
  try {
    if (options_.access == Access::read_write)
      migrate(c);
    else
      check_schema(c);
  } catch (const LedgerError& e) {
    throw LedgerError("the ledger database " + postgres_url_for_log(options_.url) +
                      " is not usable: " + e.what());
  }
}

PostgresLedger::~PostgresLedger() = default;

PostgresLedger::Connection& PostgresLedger::connection_locked() const {
  if (connection_ && !connection_->broken()) return *connection_;
  connection_.reset();
  // A server just found unreachable is not asked again at once: each caller would wait a
  // connect timeout.
  if (!failure_.empty() && Clock::now() - failed_at_ < std::chrono::seconds(1))
    throw LedgerError(failure_);
  try {
    connection_ = std::make_unique<Connection>(options_);
    failure_.clear();
  } catch (const LedgerError& e) {
    failure_ = e.what();
    failed_at_ = Clock::now();
    throw;
  }
  return *connection_;
}

template <class Use>
auto PostgresLedger::with_connection(Use&& use, bool again_if_broken) const {
  std::lock_guard lock(mutex_);
  for (int attempt = 0;; ++attempt) {
    Connection& c = connection_locked();
    try {
      return use(c);
    } catch (const LedgerError&) {
      if (!c.broken()) throw;
      connection_.reset();
      // A connection the server dropped while it was idle (a restart, a failover) fails its
      // next statement before the server runs it: once more on a fresh one. Not for what must
      // not run twice should the server have run it after all.
      if (!again_if_broken || attempt > 0) throw;
    }
  }
}
void PostgresLedger::check_schema(Connection& c) const {
  auto schema = c.exec("SELECT to_regclass('sandgate_schema') IS NOT NULL");
  if (schema.text(0, 0) != "t")
    throw LedgerError("it holds no sandgate ledger (no sandgate_schema)");
  auto version = c.exec("SELECT max(version) FROM sandgate_schema");
  std::int64_t v = version.integer(0, 0);
  if (v > kPostgresSchemaVersion)
    throw LedgerError("it was written by a newer sandgate (schema " + std::to_string(v) +
                      ", this one knows " + std::to_string(kPostgresSchemaVersion) + ")");
  if (v < 1) throw LedgerError("its schema version is missing");
  schema_version_ = static_cast<int>(v);
}

void PostgresLedger::migrate(Connection& c) {
  c.transaction([&] {
    // Replicas starting at once take turns here: the first migrates, the others find it done.
    c.exec("SELECT pg_advisory_xact_lock($1::bigint)", {std::string(kMigrationLock)});
    std::int64_t version = 0;
    if (c.exec("SELECT to_regclass('sandgate_schema') IS NOT NULL").text(0, 0) == "t") {
      check_schema(c);
      version = c.exec("SELECT max(version) FROM sandgate_schema").integer(0, 0);
    } else if (c.exec("SELECT to_regclass('sandgate_usage') IS NOT NULL OR "
                      "to_regclass('sandgate_budget_claims') IS NOT NULL")
                   .text(0, 0) == "t") {
      throw LedgerError("it has sandgate_* tables but no sandgate_schema: not ours, left alone");
    }
    for (auto v = version; v < kPostgresSchemaVersion; ++v) c.exec_script(kMigrations[v]);
    if (version < kPostgresSchemaVersion) {
      c.exec("DELETE FROM sandgate_schema");
      c.exec("INSERT INTO sandgate_schema (version) VALUES ($1::integer)",
             {std::to_string(kPostgresSchemaVersion)});
    }
    schema_version_ = kPostgresSchemaVersion;
  });
}

void PostgresLedger::save(const std::vector<UsageRecord>& records) {
  if (records.empty()) return;
  with_connection([&](Connection& c) {
    c.transaction([&] {
      for (const auto& r : records)
        c.exec(
            "INSERT INTO sandgate_usage (stretch, tenant, owner, owner_kind, replica, "
            "started_ms, ended_ms, cpu_seconds, gib_seconds, wall_seconds, calls, output_bytes, "
            "usd_per_vcpu_hour, usd_per_gib_hour, usd) VALUES ($1, $2, $3, $4, $5, $6::bigint, "
            "$7::bigint, $8::float8, $9::float8, $10::float8, $11::bigint, $12::bigint, "
            "$13::float8, $14::float8, $15::float8) ON CONFLICT (stretch) DO UPDATE SET "
            "ended_ms = excluded.ended_ms, cpu_seconds = excluded.cpu_seconds, "
            "gib_seconds = excluded.gib_seconds, wall_seconds = excluded.wall_seconds, "
            "calls = excluded.calls, output_bytes = excluded.output_bytes, usd = excluded.usd",
            {r.stretch, r.tenant, r.owner, r.owner_kind, r.replica, ms(r.started), ms(r.ended),
             number(r.cpu_seconds), number(r.gib_seconds), number(r.wall_seconds),
             std::to_string(r.calls), std::to_string(r.output_bytes), number(r.usd_per_vcpu_hour),
             number(r.usd_per_gib_hour), number(r.usd)});
      for (const auto& r : records) save_tool_use(c, r);
    });
  });
}

void PostgresLedger::save_tool_use(Connection& c, const UsageRecord& r) {
  // Like the stretch's own totals: the latest per upstream replaces what was saved before.
  for (const auto& [upstream, use] : r.tool_use)
    c.exec(
        "INSERT INTO sandgate_tool_use (stretch, upstream, calls, usd) VALUES ($1, $2, "
        "$3::bigint, $4::float8) ON CONFLICT (stretch, upstream) DO UPDATE SET calls = "
        "excluded.calls, usd = excluded.usd",
        {r.stretch, upstream, std::to_string(use.calls), number(use.usd)});
}

double PostgresLedger::spent(std::string_view tenant, Clock::time_point from,
                             Clock::time_point until) const {
  return with_connection([&](Connection& c) {
    return c
        .exec(
            "SELECT COALESCE(sum(usd), 0) FROM sandgate_usage WHERE tenant = $1 AND "
            "ended_ms >= $2::bigint AND ended_ms < $3::bigint",
            {std::string(tenant), ms(from), ms(until)})
        .real(0, 0);
  });
}

std::vector<UsageRow> PostgresLedger::usage(const UsageQuery& query, Grouping grouping) const {
  // A ledger of schema 1 (read beside an older gateway) holds no tool calls.
  const bool tool_use = schema_version_ >= 2;
  if (grouping == Grouping::upstream && !tool_use) return {};
  // The group is a fixed expression per grouping, never text from the query.
  const char* group =
      grouping == Grouping::day
          ? "to_char(to_timestamp(ended_ms / 1000.0) AT TIME ZONE 'UTC', 'YYYY-MM-DD')"
      : grouping == Grouping::owner ? "owner_kind || ':' || owner"
                                    : "''";
  std::string sql =
      grouping == Grouping::upstream
          // The calls and their prices; the sandboxes' other totals are not the upstream's.
          ? "SELECT u.tenant, t.upstream, COALESCE(sum(t.usd), 0), 0, 0, 0, 0, 0, "
            "COALESCE(sum(t.calls), 0) FROM sandgate_tool_use t JOIN sandgate_usage u ON "
            "u.stretch = t.stretch WHERE ($1::text IS NULL OR u.tenant = $1) AND ($2::bigint IS "
            "NULL OR u.ended_ms >= $2) AND ($3::bigint IS NULL OR u.ended_ms < $3) GROUP BY "
            "u.tenant, t.upstream ORDER BY u.tenant, t.upstream"
          : std::string("SELECT tenant, ") + group +
                " AS grp, COALESCE(sum(usd), 0), COALESCE(sum(cpu_seconds), 0), "
                "COALESCE(sum(gib_seconds), 0), COALESCE(sum(wall_seconds), 0), "
                "COALESCE(sum(calls), 0), COALESCE(sum(output_bytes), 0), " +
                (tool_use ? "COALESCE(sum((SELECT sum(t.calls) FROM sandgate_tool_use t WHERE "
                            "t.stretch = sandgate_usage.stretch)), 0)"
                          : "0") +
                " FROM sandgate_usage WHERE ($1::text IS NULL OR tenant = $1) AND ($2::bigint IS "
                "NULL OR ended_ms >= $2) AND ($3::bigint IS NULL OR ended_ms < $3) GROUP BY "
                "tenant, grp ORDER BY tenant, grp";
  Param tenant = query.tenant, since, until;
  if (query.since) since = ms(*query.since);
  if (query.until) until = ms(*query.until);
  return with_connection([&](Connection& c) {
    auto result = c.exec(sql.c_str(), {tenant, since, until});
    std::vector<UsageRow> rows;
    for (int i = 0; i < result.rows(); ++i) {
      UsageRow row;
      row.tenant = result.text(i, 0);
      row.group = result.text(i, 1);
      row.usd = result.real(i, 2);
      row.cpu_seconds = result.real(i, 3);
      row.gib_seconds = result.real(i, 4);
      row.wall_seconds = result.real(i, 5);
      row.calls = static_cast<std::uint64_t>(result.integer(i, 6));
      row.output_bytes = static_cast<std::uint64_t>(result.integer(i, 7));
      row.tool_calls = static_cast<std::uint64_t>(result.integer(i, 8));
      rows.push_back(std::move(row));
    }
    return rows;
  });
}

ReservationStore::Grant PostgresLedger::reserve(const std::string& tenant, const Period& period,
                                                double chunk, double budget) {
  return with_connection([&](Connection& c) {
    auto result = c.exec(
        "SELECT granted, claimed FROM sandgate_reserve($1, $2, $3::bigint, $4::float8, "
        "$5::float8)",
        {tenant, std::string(kind_name(period.kind)), ms(period.start), number(chunk),
         number(budget)});
    return Grant{result.real(0, 0), result.real(0, 1)};
  });
}

double PostgresLedger::settle(const std::string& tenant, const Period& period, double usd) {
  // A claim made twice errs on the safe side (refused early); a give-back made twice would let
  // a tenant past its budget.
  const bool again_if_broken = usd > 0;
  return with_connection(
      [&](Connection& c) {
        return c
            .exec(
                "INSERT INTO sandgate_budget_claims AS c (tenant, period_kind, period_start_ms, "
                "claimed_usd) VALUES ($1, $2, $3::bigint, GREATEST(0, $4::float8)) ON CONFLICT "
                "(tenant, period_kind, period_start_ms) DO UPDATE SET claimed_usd = "
                "GREATEST(0, c.claimed_usd + $4::float8) RETURNING claimed_usd",
                {tenant, std::string(kind_name(period.kind)), ms(period.start), number(usd)})
            .real(0, 0);
      },
      again_if_broken);
}

}  // namespace sandgate::ledger
