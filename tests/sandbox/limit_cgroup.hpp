#pragma once
// The cgroup directory that holds a process under a limit, as the host sees it: from the
// process's own cgroup (its v1 `controller` hierarchy, or the v2 one on a pure v2 host) up to the
// first whose limit file is set (not empty, not starting with the file's "no limit" value).
#include <sys/types.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace sandgate::test {

struct LimitFile {
  std::string name;       // e.g. "pids.max", "cpu.cfs_quota_us"
  std::string unlimited;  // e.g. "max", "-1"
};

inline std::filesystem::path limiting_cgroup(pid_t pid, const std::string& controller,
                                             const LimitFile& v1, const LimitFile& v2) {
  auto set_in = [](const std::filesystem::path& dir, const LimitFile& file) {
    std::ifstream in(dir / file.name);
    std::string text;
    return std::getline(in, text) && !text.empty() && text.rfind(file.unlimited, 0) != 0;
  };
  auto up_from = [&](std::filesystem::path dir, const LimitFile& file) {
    for (; !dir.empty() && dir != dir.parent_path(); dir = dir.parent_path())
      if (set_in(dir, file)) return dir;
    return std::filesystem::path();
  };
  const bool pure_v2 = std::filesystem::exists("/sys/fs/cgroup/cgroup.controllers");
  std::ifstream table("/proc/" + std::to_string(pid) + "/cgroup");
  for (std::string line; std::getline(table, line);) {
    auto first = line.find(':'), second = line.find(':', first + 1);
    std::string controllers = line.substr(first + 1, second - first - 1);
    std::string path = line.substr(second + 1).substr(1);
    std::istringstream names(controllers);
    for (std::string name; std::getline(names, name, ',');)
      if (name == controller)
        if (auto dir = up_from(std::filesystem::path("/sys/fs/cgroup/" + controllers) / path, v1);
            !dir.empty())
          return dir;
    if (controllers.empty() && pure_v2)
      if (auto dir = up_from(std::filesystem::path("/sys/fs/cgroup") / path, v2); !dir.empty())
        return dir;
  }
  return {};
}

}  // namespace sandgate::test
