#include "server/gateway/isolation_notes.hpp"

namespace sandgate::server {

std::vector<std::string> isolation_notes(const sandbox::IsolationReport& report) {
  std::vector<std::string> notes;
  if (!report.usable()) return notes;
  if (report.landlock_abi == 0)
    notes.push_back(
        "this kernel has no Landlock (Linux 5.13+ with landlock among its LSMs): sandboxed "
        "programs lose the layer that refuses writes outside /work, /tmp and /dev/shm and exec "
        "outside /usr and /work; the read-only mounts, seccomp and uids still apply");
  return notes;
}

}  // namespace sandgate::server
