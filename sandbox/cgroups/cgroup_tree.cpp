#include "cgroup_tree.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <sstream>

#include "sandbox/file_util.hpp"

namespace sandgate::sandbox {
namespace fs = std::filesystem;

bool has_mount_option(const std::string& options, const std::string& name) {
  std::istringstream in(options);
  std::string item;
  while (std::getline(in, item, ',')) {
    if (item == name) return true;
  }
  return false;
}

std::set<std::string> words(const std::string& text) {
  std::istringstream in(text);
  std::set<std::string> out;
  for (std::string w; in >> w;) out.insert(w);
  return out;
}

std::vector<CgroupMount> cgroup_mounts() {
  std::vector<CgroupMount> mounts;
  // read_file opens close-on-exec (an ifstream would not): nothing leaks into a concurrent exec.
  std::istringstream in(read_file("/proc/self/mountinfo").value_or(""));
  std::string line;
  while (std::getline(in, line)) {
    // id parent major:minor root point mount-options [optional...] - fstype source super-options
    auto dash = line.find(" - ");
    if (dash == std::string::npos) continue;
    std::istringstream head(line.substr(0, dash)), tail(line.substr(dash + 3));
    std::string id, parent, dev, root, point, mount_options;
    head >> id >> parent >> dev >> root >> point >> mount_options;
    CgroupMount m;
    tail >> m.fstype;
    std::string source;
    tail >> source >> m.options;
    if (m.fstype != "cgroup" && m.fstype != "cgroup2") continue;
    m.root = root;
    m.point = point;
    m.read_only = has_mount_option(mount_options, "ro");
    // A later mount on the same point hides the earlier one.
    std::erase_if(mounts, [&](const CgroupMount& earlier) { return earlier.point == m.point; });
    mounts.push_back(std::move(m));
  }
  return mounts;
}

fs::path own_cgroup_dir(const CgroupMount& m, const std::string& controller) {
  std::istringstream in(read_file("/proc/self/cgroup").value_or(""));
  std::string line, path;
  while (std::getline(in, line)) {
    // hierarchy-id:controllers:path ("0::path" is v2)
    auto a = line.find(':');
    auto b = line.find(':', a + 1);
    if (a == std::string::npos || b == std::string::npos) continue;
    std::string controllers = line.substr(a + 1, b - a - 1);
    bool match = controller.empty() ? controllers.empty() && line.substr(0, a) == "0"
                                    : has_mount_option(controllers, controller);
    if (match) {
      path = line.substr(b + 1);
      break;
    }
  }
  std::string rel = path;
  if (m.root != "/" && rel.rfind(m.root, 0) == 0) rel = rel.substr(m.root.size());
  fs::path relative = fs::path(rel).relative_path();
  return relative.empty() ? m.point : m.point / relative;
}

int child_cgroup_error(const fs::path& dir) {
  fs::path probe = dir / ("sandgate-probe-" + std::to_string(::getpid()));
  if (::mkdir(probe.c_str(), 0755) != 0) return errno;
  ::rmdir(probe.c_str());
  return 0;
}

std::vector<pid_t> cgroup_procs(const fs::path& dir) {
  std::vector<pid_t> pids;
  std::istringstream in(read_file(dir / "cgroup.procs").value_or(""));
  for (pid_t p; in >> p;) pids.push_back(p);
  return pids;
}

std::optional<std::uint64_t> process_start_time(pid_t pid) {
  auto stat = read_file("/proc/" + std::to_string(pid) + "/stat");
  if (!stat) return std::nullopt;
  // The command name (field 2) may hold spaces and parentheses: count fields after the last ')'.
  auto close = stat->rfind(')');
  if (close == std::string::npos) return std::nullopt;
  std::istringstream rest(stat->substr(close + 1));
  std::string field;
  for (int i = 3; i <= 22 && rest >> field; ++i) {
    if (i == 22) return std::stoull(field);
  }
  return std::nullopt;
}

}  // namespace sandgate::sandbox
