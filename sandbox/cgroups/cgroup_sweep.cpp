// The sweep at start: instance directories whose gateway is gone (a crash, a SIGKILL) are
// killed and removed, another live gateway's kept.
#include <system_error>

#include "cgroup_instance.hpp"
#include "cgroup_kill.hpp"
#include "cgroups.hpp"

namespace sandgate::sandbox {
namespace fs = std::filesystem;

int sweep_orphan_cgroups(const CgroupLayout& layout) {
  std::vector<fs::path> orphans;
  for (const auto& base : layout.bases) {
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(base, ec)) {
      std::string name = entry.path().filename().string();
      if (!entry.is_directory() || name.rfind(kInstancePrefix, 0) != 0) continue;
      // The v2 leaf holds a gateway process (this one, or another in the same cgroup).
      if (name == std::string(kInstancePrefix) + "gateway") continue;
      if (owner_alive(name)) continue;
      orphans.push_back(entry.path());
    }
  }
  kill_and_remove(orphans);
  return static_cast<int>(orphans.size());
}

}  // namespace sandgate::sandbox
