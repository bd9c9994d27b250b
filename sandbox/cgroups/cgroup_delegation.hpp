#pragma once
// cgroup v2: makes the gateway's own cgroup the parent of its sandboxes' cgroups. The kernel
// lets a cgroup hand controllers to children only while it has no processes of its own, so the
// gateway first moves itself into a leaf ("sandgate-gateway") and then enables memory, pids and
// cpu — in that order: enabling cpu (a threaded controller) while the cgroup still has members
// turns it into a thread root, after which memory and moving into a child fail (EOPNOTSUPP).
// Where the cgroup filesystem is mounted read-only (a Kubernetes container), a fresh cgroup2
// mount over it shows the container's own cgroup writable.
#include <filesystem>
#include <set>
#include <string>
#include <vector>

namespace sandgate::sandbox {

struct V2Delegation {
  std::filesystem::path own;          // the gateway's v2 cgroup; empty without a v2 hierarchy
  bool writable = false;              // children can be created under `own`
  std::set<std::string> controllers;  // the wanted controllers children of `own` now have
  std::string note;                   // what was done (fresh mount, moved into a leaf)
  std::string problem;                // why a wanted controller is missing, and the fix
};

// Idempotent within a process: several sandbox hosts may share one delegation.
V2Delegation delegate_v2(const std::vector<std::string>& wanted);
// Undoes what delegate_v2 did once its last user is gone: disables the controllers it enabled,
// moves the gateway back and removes the leaf. Best effort; failures leave an empty leaf that
// the next start reuses.
void undelegate_v2();

}  // namespace sandgate::sandbox
