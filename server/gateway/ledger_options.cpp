// The usage ledger's options (issue #28): where metered use is recorded, and how a PostgreSQL
// ledger shared by replicas reserves tenants' budgets.
#include <stdexcept>

#include "ledger/postgres_ledger.hpp"
#include "server/gateway/config_option.hpp"

namespace sandgate::server::options_detail {
std::vector<Option> ledger_options() {
  return {
      {"--ledger", "SANDGATE_LEDGER", "sqlite",
       "Where every sandbox's metered use (CPU and memory seconds, wall time, calls, output "
       "bytes, the prices applied and the USD) is recorded per tenant and session or handle: "
       "`sqlite`, the embedded ledger `ledger.sqlite` in `--state-dir` (WAL; saved every second "
       "off the request path, so a SIGKILL loses at most the last second; read it with "
       "`sandgate usage`); a `postgresql://user@host:port/db` URI, a PostgreSQL database every "
       "replica of a deployment shares (tables `sandgate_*`, migrated at start; tenant budgets "
       "hold across the replicas; the password comes from `--ledger-password-file`, a URI "
       "carrying one is refused); or `off`. Without a `--state-dir` (for `sqlite`), or with "
       "`off`, nothing is written (an info line at start says so) and tenant budgets count in "
       "memory, from this start on.",
       [](Config& c, const std::string& v) {
         if (v == "sqlite") {
           c.ledger.kind = ledger::LedgerKind::sqlite;
         } else if (v == "off") {
           c.ledger.kind = ledger::LedgerKind::off;
         } else if (ledger::is_postgres_url(v)) {
           if (auto refusal = ledger::postgres_url_refusal(v); !refusal.empty())
             throw std::invalid_argument(refusal);
           c.ledger.kind = ledger::LedgerKind::postgres;
           c.ledger.postgres_url = v;
         } else {
           throw std::invalid_argument("expected sqlite, off or a postgresql:// URI");
         }
       }},
      {"--ledger-password-file", "SANDGATE_LEDGER_PASSWORD_FILE", "",
       "File whose first line is the password of the PostgreSQL ledger's user (e.g. a mounted "
       "Kubernetes Secret); read at start. Empty: no password (peer, certificate or `~/.pgpass` "
       "authentication).",
       [](Config& c, const std::string& v) { c.ledger.postgres_password_file = v; }},
      {"--budget-chunk-usd", "SANDGATE_BUDGET_CHUNK_USD", "0.10",
       "With a PostgreSQL ledger: how much of a tenant's budget a replica reserves at a time "
       "(one atomic statement). A replica runs the tenant's calls within its reservation without "
       "a round trip, so the database is asked about once per chunk spent; unused reservations "
       "are given back after 5 s without use and at shutdown.",
       [](Config& c, const std::string& v) { c.ledger.shared.chunk_usd = to_positive(v); }},
      {"--ledger-unreachable", "SANDGATE_LEDGER_UNREACHABLE", "refuse",
       "With a PostgreSQL ledger that cannot be reached: `refuse` a budgeted tenant's calls once "
       "its replica's reservation is used up (a tool error saying to try again; calls within a "
       "reservation go on, and the gateway reconnects by itself), or `allow` them, unbudgeted "
       "until the database is back.",
       [](Config& c, const std::string& v) {
         if (v != "refuse" && v != "allow") throw std::invalid_argument("expected refuse or allow");
         c.ledger.shared.allow_when_unreachable = v == "allow";
       }},
  };
}

}  // namespace sandgate::server::options_detail
