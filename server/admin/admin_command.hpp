#pragma once
// The CLI verbs on the admin channel of the gateway running with a state directory:
//   sandgate sessions --state-dir D [--tenant T] [--json]
//   sandgate end --state-dir D (--session PREFIX_OR_ID | --tenant T)
//   sandgate connections --state-dir D [--session PREFIX_OR_ID] [--tenant T] [--since 10m] [--json]
// D defaults to $SANDGATE_STATE_DIR, as for `sandgate usage`.
#include <iosfwd>
#include <string>
#include <vector>

namespace sandgate::server {

// Whether `verb` (argv[1]) is one of these.
bool is_admin_verb(const std::string& verb);

// Runs `verb` with `args` (after it); the process exit code: 0 done, 1 the gateway refused or
// could not be reached, 2 bad arguments.
int admin_command(const std::string& verb, const std::vector<std::string>& args, char** envp,
                  std::ostream& out, std::ostream& err);

}  // namespace sandgate::server
