#pragma once
// `sandgate usage`: what tenants used and spent, read from the ledger the gateway writes (while
// it runs, too), for operators who bill or answer "what did tenant X use this month" without SQL.
//
//   sandgate usage [--state-dir DIR] [--tenant T] [--since DATE] [--until DATE]
//                  [--by tenant|day|session] [--format table|csv|json]
//
// DATE is a UTC day (2026-12-01: its midnight) or a UTC instant (2026-12-01T12:00:00Z); --since
// is inclusive, --until exclusive, both by when a record's stretch last ended.
#include <iosfwd>
#include <string>
#include <vector>

namespace sandgate::server {

// `args` are what follows `usage`; `envp` gives SANDGATE_STATE_DIR as the server reads it.
// Returns the exit status: 0, 1 when the ledger cannot be read (`err` says why), 2 for a usage
// error.
int usage_command(const std::vector<std::string>& args, char** envp, std::ostream& out,
                  std::ostream& err);

}  // namespace sandgate::server
