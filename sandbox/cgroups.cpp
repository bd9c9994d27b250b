#include "cgroups.hpp"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <set>
#include <sstream>
#include <system_error>
#include <thread>

#include "file_util.hpp"

namespace sandgate::sandbox {
namespace fs = std::filesystem;

namespace {

constexpr const char* kPrefix = "sandgate-";

struct Mount {
  std::string root;     // the mount's root inside its hierarchy
  fs::path point;       // where it is mounted
  std::string fstype;   // cgroup or cgroup2
  std::string options;  // super options: the v1 controllers
};

std::vector<Mount> cgroup_mounts() {
  std::vector<Mount> mounts;
  std::ifstream in("/proc/self/mountinfo");
  std::string line;
  while (std::getline(in, line)) {
    // id parent major:minor root point options [optional...] - fstype source superoptions
    auto dash = line.find(" - ");
    if (dash == std::string::npos) continue;
    std::istringstream head(line.substr(0, dash)), tail(line.substr(dash + 3));
    std::string id, parent, dev, root, point;
    head >> id >> parent >> dev >> root >> point;
    Mount m;
    tail >> m.fstype;
    std::string source;
    tail >> source >> m.options;
    if (m.fstype != "cgroup" && m.fstype != "cgroup2") continue;
    m.root = root;
    m.point = point;
    mounts.push_back(std::move(m));
  }
  return mounts;
}

bool has_option(const std::string& options, const std::string& name) {
  std::istringstream in(options);
  std::string item;
  while (std::getline(in, item, ',')) {
    if (item == name) return true;
  }
  return false;
}

// Our own cgroup path in a hierarchy, from /proc/self/cgroup ("" key is v2).
std::string own_path(const std::string& controller_key) {
  std::ifstream in("/proc/self/cgroup");
  std::string line;
  while (std::getline(in, line)) {
    auto a = line.find(':');
    auto b = line.find(':', a + 1);
    if (a == std::string::npos || b == std::string::npos) continue;
    std::string controllers = line.substr(a + 1, b - a - 1);
    std::string path = line.substr(b + 1);
    if (controller_key.empty() ? controllers.empty() && line.substr(0, a) == "0"
                               : has_option(controllers, controller_key))
      return path;
  }
  return {};
}

fs::path join_under_mount(const Mount& m, const std::string& path) {
  std::string rel = path;
  if (m.root != "/" && rel.rfind(m.root, 0) == 0) rel = rel.substr(m.root.size());
  return m.point / fs::path(rel).relative_path();
}

bool writable_parent(const fs::path& dir) {
  fs::path probe = dir / (std::string(kPrefix) + "probe-" + std::to_string(::getpid()));
  if (::mkdir(probe.c_str(), 0755) != 0) return false;
  ::rmdir(probe.c_str());
  return true;
}

std::set<std::string> words(const std::string& text) {
  std::istringstream in(text);
  std::set<std::string> out;
  for (std::string w; in >> w;) out.insert(w);
  return out;
}

// cgroup v2: make `controllers` available to children of our cgroup. Returns those enabled.
std::set<std::string> enable_v2_controllers(const fs::path& own,
                                            const std::set<std::string>& want) {
  auto available = words(read_file(own / "cgroup.controllers").value_or(""));
  std::set<std::string> enabled;
  for (const auto& c : want) {
    if (!available.count(c)) continue;
    std::string line = "+" + c;
    try {
      write_file(own / "cgroup.subtree_control", line);
      enabled.insert(c);
    } catch (const std::system_error& e) {
      if (e.code().value() != EBUSY) continue;
      // No-internal-process rule: move ourselves into a leaf, then enable for children.
      fs::path leaf = own / (std::string(kPrefix) + "gateway");
      ::mkdir(leaf.c_str(), 0755);
      try {
        write_file(leaf / "cgroup.procs", "0");
        write_file(own / "cgroup.subtree_control", line);
        enabled.insert(c);
      } catch (const std::system_error&) {
      }
    }
  }
  return enabled;
}

std::string version_name(CgroupVersion v) {
  switch (v) {
    case CgroupVersion::v1:
      return "v1";
    case CgroupVersion::v2:
      return "v2";
    default:
      return "none";
  }
}

std::string cpu_quota_line_v2(double cpus) {
  return std::to_string(static_cast<long>(cpus * 100000)) + " 100000";
}

std::vector<pid_t> procs_of(const fs::path& dir) {
  std::vector<pid_t> pids;
  std::istringstream in(read_file(dir / "cgroup.procs").value_or(""));
  for (pid_t p; in >> p;) pids.push_back(p);
  return pids;
}

// Kills everything in a cgroup and removes it, retrying while the kernel reaps.
void kill_and_remove(const fs::path& dir) {
  if (fs::exists(dir / "cgroup.kill")) {
    try {
      write_file(dir / "cgroup.kill", "1");
    } catch (const std::system_error&) {
    }
  }
  for (int attempt = 0; attempt < 200; ++attempt) {
    for (pid_t p : procs_of(dir)) ::kill(p, SIGKILL);
    if (::rmdir(dir.c_str()) == 0 || errno == ENOENT) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

}  // namespace

CgroupLayout CgroupLayout::probe() {
  CgroupLayout layout;
  auto mounts = cgroup_mounts();

  // cgroup v2 first: where the controllers are delegated, one directory serves them all.
  std::set<std::string> v2_enabled;
  fs::path v2_parent;
  for (const auto& m : mounts) {
    if (m.fstype != "cgroup2") continue;
    fs::path own = join_under_mount(m, own_path(""));
    if (!writable_parent(own)) break;
    v2_enabled = enable_v2_controllers(own, {"memory", "pids", "cpu"});
    v2_parent = own;
    break;
  }
  auto place = [&](ControllerPlace& slot, const std::string& v2_name, const std::string& v1_name) {
    if (v2_enabled.count(v2_name)) {
      slot = {CgroupVersion::v2, v2_parent};
      return;
    }
    for (const auto& m : mounts) {
      if (m.fstype != "cgroup" || !has_option(m.options, v1_name)) continue;
      fs::path dir = join_under_mount(m, own_path(v1_name));
      if (writable_parent(dir)) slot = {CgroupVersion::v1, dir};
      return;
    }
  };
  place(layout.memory, "memory", "memory");
  place(layout.pids, "pids", "pids");
  place(layout.cpu, "cpu", "cpu");
  place(layout.cpuacct, "cpu", "cpuacct");
  // cpu.stat exists in every v2 cgroup, so usage can be read there even without the controller.
  if (layout.cpuacct.version == CgroupVersion::none && !v2_parent.empty())
    layout.cpuacct = {CgroupVersion::v2, v2_parent};
  return layout;
}

bool CgroupLayout::complete() const {
  return memory.version != CgroupVersion::none && pids.version != CgroupVersion::none &&
         cpu.version != CgroupVersion::none && cpuacct.version != CgroupVersion::none;
}

std::string CgroupLayout::describe() const {
  std::ostringstream out;
  auto one = [&](const char* name, const ControllerPlace& p) {
    out << name << "=" << version_name(p.version);
    if (p.version != CgroupVersion::none) out << "(" << p.parent.string() << ")";
    out << " ";
  };
  one("memory", memory);
  one("pids", pids);
  one("cpu", cpu);
  one("cpuacct", cpuacct);
  std::string s = out.str();
  if (!s.empty()) s.pop_back();
  return s;
}

std::string cgroup_name_for(const std::string& sandbox_id) {
  return std::string(kPrefix) + std::to_string(::getpid()) + "-" + sandbox_id;
}

CgroupSet::CgroupSet(const CgroupLayout& layout, const std::string& name, const Limits& limits) {
  auto dir_for = [&](const ControllerPlace& p) -> fs::path {
    if (p.version == CgroupVersion::none) return {};
    fs::path dir = p.parent / name;
    for (const auto& d : dirs_)
      if (d == dir) return dir;
    if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST)
      throw std::system_error(errno, std::generic_category(), "mkdir " + dir.string());
    dirs_.push_back(dir);
    return dir;
  };
  try {
    memory_ = layout.memory;
    cpuacct_ = layout.cpuacct;
    if (auto d = dir_for(layout.memory); !d.empty()) {
      memory_.parent = d;
      std::string bytes = std::to_string(limits.memory_bytes);
      if (layout.memory.version == CgroupVersion::v2) {
        write_file(d / "memory.max", bytes);
        if (fs::exists(d / "memory.swap.max")) write_file(d / "memory.swap.max", "0");
      } else {
        write_file(d / "memory.limit_in_bytes", bytes);
        if (fs::exists(d / "memory.memsw.limit_in_bytes"))
          write_file(d / "memory.memsw.limit_in_bytes", bytes);
      }
    }
    if (auto d = dir_for(layout.pids); !d.empty())
      write_file(d / "pids.max", std::to_string(limits.max_processes));
    if (auto d = dir_for(layout.cpu); !d.empty()) {
      if (layout.cpu.version == CgroupVersion::v2) {
        write_file(d / "cpu.max", cpu_quota_line_v2(limits.cpus));
      } else {
        write_file(d / "cpu.cfs_period_us", "100000");
        write_file(d / "cpu.cfs_quota_us", std::to_string(static_cast<long>(limits.cpus * 100000)));
      }
    }
    if (auto d = dir_for(layout.cpuacct); !d.empty()) cpuacct_.parent = d;
  } catch (...) {
    remove();
    throw;
  }
}

CgroupSet::~CgroupSet() {
  remove();
}

void CgroupSet::attach(pid_t pid) const {
  for (const auto& d : dirs_) write_file(d / "cgroup.procs", std::to_string(pid));
}

std::uint64_t CgroupSet::cpu_usage_ns() const {
  if (cpuacct_.version == CgroupVersion::v1) {
    auto text = read_file(cpuacct_.parent / "cpuacct.usage");
    return text ? std::stoull(*text) : 0;
  }
  if (cpuacct_.version == CgroupVersion::v2)
    return read_keyed_value(cpuacct_.parent / "cpu.stat", "usage_usec").value_or(0) * 1000;
  return 0;
}

std::uint64_t CgroupSet::memory_bytes() const {
  const char* file =
      memory_.version == CgroupVersion::v2 ? "memory.current" : "memory.usage_in_bytes";
  if (memory_.version == CgroupVersion::none) return 0;
  auto text = read_file(memory_.parent / file);
  return text ? std::stoull(*text) : 0;
}

std::uint64_t CgroupSet::oom_kills() const {
  if (memory_.version == CgroupVersion::v2)
    return read_keyed_value(memory_.parent / "memory.events", "oom_kill").value_or(0);
  if (memory_.version == CgroupVersion::v1)
    return read_keyed_value(memory_.parent / "memory.oom_control", "oom_kill").value_or(0);
  return 0;
}

void CgroupSet::remove() {
  for (const auto& d : dirs_) kill_and_remove(d);
  dirs_.clear();
}

int sweep_orphan_cgroups(const CgroupLayout& layout) {
  int removed = 0;
  std::set<fs::path> parents;
  for (const auto* p : {&layout.memory, &layout.pids, &layout.cpu, &layout.cpuacct})
    if (p->version != CgroupVersion::none) parents.insert(p->parent);
  for (const auto& parent : parents) {
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(parent, ec)) {
      std::string name = entry.path().filename().string();
      if (!entry.is_directory() || name.rfind(kPrefix, 0) != 0) continue;
      std::string rest = name.substr(std::string(kPrefix).size());
      if (rest == "gateway") continue;
      pid_t owner = static_cast<pid_t>(std::atol(rest.c_str()));
      // A live gateway (this one included) owns its cgroups; only orphans are swept.
      if (owner > 0 && ::kill(owner, 0) == 0) continue;
      kill_and_remove(entry.path());
      ++removed;
    }
  }
  return removed;
}

}  // namespace sandgate::sandbox
