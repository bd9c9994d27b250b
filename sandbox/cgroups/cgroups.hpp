#pragma once
// Per-sandbox cgroups, probed per controller: cgroup v2 where the controller is delegated to us,
// cgroup v1 where only a v1 hierarchy has it (hybrid hosts), none where neither is writable.
//
// Layout, under the gateway's own cgroup in each hierarchy:
//   sandgate-gateway/                  v2 only: the gateway process (see cgroup_delegation.hpp)
//   sandgate-<pid>-<start>-<n>/        this gateway's sandboxes; memory capped at the budget
//     sb1/ sb2/ …                      one per sandbox, with its own limits
// The instance directory is named by the gateway's pid and start time, so a crash sweep can
// tell a live gateway's sandboxes (left alone, on a shared host too) from a dead one's, even
// when a restarted container's gateway has the same pid again.
#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "sandbox/limits.hpp"
#include "stat_file.hpp"

namespace sandgate::sandbox {

enum class CgroupVersion { none, v1, v2 };

// Where children for one controller are created.
struct ControllerPlace {
  CgroupVersion version = CgroupVersion::none;
  std::filesystem::path parent;
};

struct CgroupLayout {
  ControllerPlace memory, pids, cpu, cpuacct;  // parents are this gateway's instance directories
  // Where each sandbox also gets a cgroup only so that all its processes can be killed without
  // naming them by pid (a pid read from cgroup.procs may be reused by then): cgroup v2's
  // cgroup.kill (a pure v2 host, or a hybrid host's unified hierarchy), else the v1 freezer
  // (frozen processes cannot exit, so their pids stay theirs while they are signalled).
  ControllerPlace killer;
  std::vector<std::filesystem::path> bases;  // the gateway's own cgroups the instances sit in
  // What all sandboxes together may hold: the limit of the gateway's cgroup (a container's, a
  // unit's) minus the gateway's reserve. The kernel's OOM then happens inside the instance
  // cgroup and picks a sandbox process; it never reaches the container's limit, where
  // memory.oom.group=1 (set by the kubelet) would kill the gateway with it. 0: no limit above.
  std::uint64_t memory_budget = 0;
  std::uint64_t memory_limit_above = 0;  // the limit the budget was taken from
  std::string notes;                     // what the probe did (fresh mount, leaf)
  std::string problem;                   // why a controller is missing, with the fix

  // Reads the mounts and our cgroups, delegates v2 controllers, and creates the instance
  // directories. `gateway_reserve` is kept free of sandboxes under a memory limit above us;
  // `known_limit` (0: none) is such a limit the cgroups may not show.
  static CgroupLayout probe(std::uint64_t gateway_reserve, std::uint64_t known_limit = 0);
  bool complete() const;  // every controller has a place
  std::string describe() const;
  // Memory the sandboxes hold together now (0 when unknown).
  std::uint64_t sandbox_memory_bytes() const;
  // Removes the instance directories (killing anything left) and undoes the v2 delegation.
  void release();
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
  // The most memory held since the previous call (the first: since creation), from the
  // kernel's watermark (v2 memory.peak, v1 memory.max_usage_in_bytes), which is then reset.
  // 0 when unknown: no such file, or a watermark that cannot be reset and has not risen.
  std::uint64_t memory_peak_since_last();
  std::uint64_t oom_kills() const;
  // A background share of contended CPU (cpu.weight 10, v1 cpu.shares 102: a tenth of the
  // default) or the default one (100, 1024, what a new cgroup has) against the other sandboxes:
  // a ready sandbox is warmed up behind the calls that need the CPU now, yet still warms up
  // (within its warm-up timeout) beside a few busy ones. Its quota (cpu.max) is unchanged.
  // False if it could not be written (no cpu controller here).
  bool set_background(bool background) const;
  // Kills whatever is still inside, then removes the directories. Idempotent.
  void remove();

 private:
  std::vector<std::filesystem::path> dirs_;         // the killer's first
  ControllerPlace memory_, cpuacct_, cpu_;          // cpu_.parent: this sandbox's cpu directory
  StatFile cpu_usage_, memory_usage_, oom_events_;  // what the meter samples
  StatFile memory_peak_;                            // opened for writing: reset per interval
  bool peak_resettable_ = true;                     // until a reset is refused
  std::uint64_t last_peak_ = 0;                     // for a watermark that cannot be reset
};

// Removes the instance directories of gateways that are gone (after a crash), with every
// sandbox cgroup in them; live gateways' are left alone. Returns how many were removed.
int sweep_orphan_cgroups(const CgroupLayout& layout);

}  // namespace sandgate::sandbox
