#pragma once
// Per-sandbox cgroups, probed per controller: cgroup v2 where the controller is delegated to us,
// cgroup v1 where only a v1 hierarchy has it (hybrid hosts), none where neither is writable.
#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "limits.hpp"

namespace sandgate::sandbox {

enum class CgroupVersion { none, v1, v2 };

// Where children for one controller are created.
struct ControllerPlace {
  CgroupVersion version = CgroupVersion::none;
  std::filesystem::path parent;
};

struct CgroupLayout {
  ControllerPlace memory, pids, cpu, cpuacct;

  // Reads /proc/self/cgroup and /proc/self/mountinfo and checks that each place is writable.
  // On cgroup v2 it enables the controllers for children (moving the gateway into a leaf first
  // when the no-internal-process rule requires it).
  static CgroupLayout probe();
  bool complete() const;  // every controller has a place
  std::string describe() const;
};

// One sandbox's cgroups (one directory per distinct hierarchy).
class CgroupSet {
 public:
  CgroupSet() = default;
  // Creates `name` under every place and applies the limits; throws std::system_error.
  CgroupSet(const CgroupLayout& layout, const std::string& name, const Limits& limits);
  CgroupSet(CgroupSet&&) noexcept = default;
  CgroupSet& operator=(CgroupSet&&) noexcept = default;
  ~CgroupSet();

  void attach(pid_t pid) const;
  std::uint64_t cpu_usage_ns() const;
  std::uint64_t memory_bytes() const;
  std::uint64_t oom_kills() const;
  // Kills whatever is still inside, then removes the directories. Idempotent.
  void remove();

 private:
  std::vector<std::filesystem::path> dirs_;
  ControllerPlace memory_, cpuacct_;
};

// Removes the cgroups of sandboxes whose gateway process is gone (after a crash).
// Names are "sandgate-<gateway pid>-<sandbox id>"; live gateways' cgroups are left alone.
int sweep_orphan_cgroups(const CgroupLayout& layout);
std::string cgroup_name_for(const std::string& sandbox_id);

}  // namespace sandgate::sandbox
