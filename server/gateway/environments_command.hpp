#pragma once
// `sandgate environments`: each environment's state (ready with its size, failed with the
// reason, building, or not built), its definition's hash and where its layer is, read from the
// definitions file and the layer store the gateway uses (while it runs, too).
//
//   sandgate environments [--json] [gateway options: --environments FILE, --environments-dir DIR
//                          or --state-dir DIR, --environments-built DIRS]
//
// `sandgate environments build --into DIR [gateway options]` builds every environment of the
// file into DIR ahead (an image's build stage, a volume), as the gateway would build it, and
// exits 0 when all of them are ready; a gateway given `--environments-built DIR` uses them.
#include <iosfwd>
#include <string>
#include <vector>

namespace sandgate::server {

// `args` are what follows `environments`. Returns the exit status: 0; 1 when the store cannot be
// read or (build) an environment failed; 2 for a usage error.
int environments_command(const std::vector<std::string>& args, char** envp, std::ostream& out,
                         std::ostream& err);

}  // namespace sandgate::server
