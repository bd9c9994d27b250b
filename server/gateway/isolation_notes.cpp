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
  if (report.mode == "no-cgroups")
    notes.push_back(
        "no writable cgroup (--accept-isolation=no-cgroups): sandboxes run without memory, CPU "
        "and process limits, and their spend is not metered; the namespaces, seccomp and "
        "Landlock still apply");
  if (!report.privileged)
    notes.push_back(
        "not running as root: every sandbox runs as the same host uid, so sandboxes are not "
        "kept apart from each other by uid; each still has its own namespaces and /work");
  return notes;
}

}  // namespace sandgate::server
