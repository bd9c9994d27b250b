#pragma once
// Where the cgroup hierarchies are and where this process sits in them: read from
// /proc/self/mountinfo and /proc/self/cgroup. No writes.
#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace sandgate::sandbox {

struct CgroupMount {
  std::string root;             // the mount's root inside its hierarchy
  std::filesystem::path point;  // where it is mounted
  std::string fstype;           // cgroup or cgroup2
  std::string options;          // super options: the v1 controllers
  bool read_only = false;       // the mount itself (not the superblock) is read-only
};

std::vector<CgroupMount> cgroup_mounts();
// Our own cgroup directory in the v2 hierarchy (`controller` empty) or in the v1 hierarchy that
// carries `controller`, under the mount `m`.
std::filesystem::path own_cgroup_dir(const CgroupMount& m, const std::string& controller);
bool has_mount_option(const std::string& options, const std::string& name);
std::set<std::string> words(const std::string& text);
// Whether this process may create child cgroups in `dir` (tried with a probe directory that is
// removed again). 0 when it may, else the errno of the refusal.
int child_cgroup_error(const std::filesystem::path& dir);
// The pids listed in a cgroup's cgroup.procs (empty when unreadable).
std::vector<pid_t> cgroup_procs(const std::filesystem::path& dir);
// Start time of a process (clock ticks since boot, /proc/PID/stat field 22): with the pid it
// names one process across pid reuse. std::nullopt when the process does not exist.
std::optional<std::uint64_t> process_start_time(pid_t pid);

}  // namespace sandgate::sandbox
