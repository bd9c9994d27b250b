#pragma once
// Where usage is kept: the embedded SQLite file (sqlite_ledger) or, later, a database several
// replicas share. The writer saves into it; budgets and `sandgate usage` read from it.
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "ledger/usage_record.hpp"

namespace sandgate::ledger {

struct LedgerError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct UsageQuery {
  std::optional<std::string> tenant;
  std::optional<Clock::time_point> since;  // records that ended at or after
  std::optional<Clock::time_point> until;  // records that ended before
};

// `upstream`: one row per tenant and upstream MCP server its sandboxes called, with the calls
// and their prices only (`tool_calls`, `usd`; the other totals are the sandboxes', not theirs).
enum class Grouping { tenant, day, owner, upstream };

struct UsageRow {
  std::string tenant;
  std::string
      group;  // the UTC day ("2026-12-04"), owner or upstream by the grouping; "" for tenant
  double usd = 0;
  double cpu_seconds = 0;
  double gib_seconds = 0;
  double wall_seconds = 0;
  std::uint64_t calls = 0;
  std::uint64_t output_bytes = 0;
  std::uint64_t tool_calls = 0;  // calls to upstream MCP servers (code mode)
};

class LedgerStore {
 public:
  virtual ~LedgerStore() = default;
  // Each record holds its stretch's latest totals: a new stretch is added, a known one's totals
  // replaced. All of them or none. Throws LedgerError (nothing is written).
  virtual void save(const std::vector<UsageRecord>& records) = 0;
  // What `tenant` spent in records that ended in [from, until).
  virtual double spent(std::string_view tenant, Clock::time_point from,
                       Clock::time_point until) const = 0;
  // Totals by tenant, and by UTC day or owner when asked, ordered by tenant then group.
  virtual std::vector<UsageRow> usage(const UsageQuery& query, Grouping grouping) const = 0;
};

}  // namespace sandgate::ledger
