#include "cgroups.hpp"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <map>
#include <sstream>
#include <system_error>
#include <thread>

#include "cgroup_delegation.hpp"
#include "cgroup_tree.hpp"
#include "sandbox/file_util.hpp"

namespace sandgate::sandbox {
namespace fs = std::filesystem;

namespace {

constexpr const char* kPrefix = "sandgate-";
constexpr std::uint64_t kNoLimit = 1ull << 60;  // v1 reports "no limit" as a huge number

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

// "sandgate-<pid>-<start time>-<n>": n tells apart several sandbox hosts in one process.
std::string instance_name() {
  static std::atomic<int> next{1};
  pid_t pid = ::getpid();
  return std::string(kPrefix) + std::to_string(pid) + "-" +
         std::to_string(process_start_time(pid).value_or(0)) + "-" + std::to_string(next++);
}

// Whether the gateway that named a directory "sandgate-<pid>-<start>-…" is still running. Names
// of older versions ("sandgate-<pid>-sb<N>") and probes ("sandgate-probe-<pid>") carry no start
// time: their pid alone decides.
bool owner_alive(const std::string& name) {
  std::string rest = name.substr(std::string(kPrefix).size());
  if (rest.rfind("probe-", 0) == 0) rest = rest.substr(6);
  std::istringstream in(rest);
  long pid = 0;
  char dash = 0;
  if (!(in >> pid) || pid <= 0) return false;
  std::uint64_t start = 0;
  if (in >> dash >> start && dash == '-') {
    auto actual = process_start_time(static_cast<pid_t>(pid));
    return actual && *actual == start;
  }
  return ::kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM;
}

std::vector<fs::path> child_dirs(const fs::path& dir) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec))
    if (entry.is_directory(ec)) out.push_back(entry.path());
  return out;
}

// Freezes a v1 freezer cgroup, signals its members, thaws it. A frozen process cannot exit, so
// a pid listed while frozen is still that process when it is signalled; it dies on thawing.
void freeze_and_kill(const fs::path& dir) {
  try {
    write_file(dir / "freezer.state", "FROZEN");
  } catch (const std::system_error&) {
    return;
  }
  bool frozen = false;
  for (int attempt = 0; attempt < 200 && !frozen; ++attempt) {
    frozen = read_file(dir / "freezer.state").value_or("") == "FROZEN\n";
    if (!frozen) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  // Still FREEZING (a process stuck in the kernel): signalling by pid would not be safe.
  if (frozen)
    for (pid_t p : cgroup_procs(dir)) ::kill(p, SIGKILL);
  try {
    write_file(dir / "freezer.state", "THAWED");
  } catch (const std::system_error&) {
  }
}

// Kills everything in a cgroup and below, where the hierarchy offers a way that names no pid:
// cgroup.kill (v2, the whole subtree at once) or the v1 freezer. Other v1 hierarchies hold the
// same processes as the sandbox's killer cgroup, which kills them; nothing is signalled by a
// pid read from their cgroup.procs.
void kill_members(const fs::path& dir) {
  if (fs::exists(dir / "cgroup.kill")) {
    try {
      write_file(dir / "cgroup.kill", "1");
    } catch (const std::system_error&) {
    }
    return;
  }
  for (const auto& child : child_dirs(dir)) kill_members(child);
  if (fs::exists(dir / "freezer.state")) freeze_and_kill(dir);
}

// Removes a cgroup and its children once their processes are gone, retrying (and killing
// again) while the kernel reaps.
void remove_tree(const fs::path& dir) {
  for (const auto& child : child_dirs(dir)) remove_tree(child);
  for (int attempt = 0; attempt < 200; ++attempt) {
    if (::rmdir(dir.c_str()) == 0 || errno == ENOENT) return;
    if (attempt % 20 == 19) kill_members(dir);
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

// Kills first in every directory (the killer's reaches the processes the others list too),
// then removes them.
void kill_and_remove(const std::vector<fs::path>& dirs) {
  for (const auto& d : dirs) kill_members(d);
  for (const auto& d : dirs) remove_tree(d);
}

// The tightest memory limit on `dir` and the ancestors we can see (a container's, a systemd
// unit's or slice's); 0 when there is none.
std::uint64_t tightest_memory_limit(fs::path dir, CgroupVersion version) {
  const char* file = version == CgroupVersion::v2 ? "memory.max" : "memory.limit_in_bytes";
  std::uint64_t tightest = 0;
  for (; fs::exists(dir / "cgroup.procs"); dir = dir.parent_path()) {
    auto text = read_file(dir / file);
    if (text && !text->empty() && std::isdigit(static_cast<unsigned char>((*text)[0]))) {
      std::uint64_t value = std::stoull(*text);
      if (value < kNoLimit && (tightest == 0 || value < tightest)) tightest = value;
    }
    if (dir == dir.parent_path()) break;
  }
  return tightest;
}

const char* memory_usage_file(CgroupVersion v) {
  return v == CgroupVersion::v2 ? "memory.current" : "memory.usage_in_bytes";
}

const char* memory_peak_file(CgroupVersion v) {
  return v == CgroupVersion::v2 ? "memory.peak" : "memory.max_usage_in_bytes";
}

const char* memory_limit_file(CgroupVersion v) {
  return v == CgroupVersion::v2 ? "memory.max" : "memory.limit_in_bytes";
}

}  // namespace

CgroupLayout CgroupLayout::probe(std::uint64_t gateway_reserve, std::uint64_t known_limit) {
  CgroupLayout layout;
  const std::vector<std::string> wanted = {"memory", "pids", "cpu"};
  V2Delegation v2 = delegate_v2(wanted);
  layout.notes = v2.note;
  layout.problem = v2.problem;
  if (v2.writable) layout.bases.push_back(v2.own);

  auto mounts = cgroup_mounts();
  auto v1_place = [&](const std::string& v1_name) -> ControllerPlace {
    for (const auto& m : mounts) {
      if (m.fstype != "cgroup" || !has_mount_option(m.options, v1_name)) continue;
      fs::path dir = own_cgroup_dir(m, v1_name);
      if (child_cgroup_error(dir) == 0) return {CgroupVersion::v1, dir};
      return {};
    }
    return {};
  };
  auto place = [&](ControllerPlace& slot, const std::string& v2_name, const std::string& v1_name) {
    if (v2.controllers.count(v2_name))
      slot = {CgroupVersion::v2, v2.own};
    else
      slot = v1_place(v1_name);
  };
  place(layout.memory, "memory", "memory");
  place(layout.pids, "pids", "pids");
  place(layout.cpu, "cpu", "cpu");
  place(layout.cpuacct, "cpu", "cpuacct");
  // cpu.stat exists in every v2 cgroup, so usage can be read there even without the controller.
  if (layout.cpuacct.version == CgroupVersion::none && v2.writable)
    layout.cpuacct = {CgroupVersion::v2, v2.own};
  // cgroup.kill needs no controller, so a writable v2 hierarchy serves (a hybrid host's too).
  if (v2.writable) layout.killer = {CgroupVersion::v2, v2.own};

  // One instance directory per hierarchy, shared by the controllers that hierarchy carries.
  std::string name = instance_name();
  std::map<fs::path, fs::path> instance_of;
  auto make_instance = [&](ControllerPlace* slot) {
    if (slot->version == CgroupVersion::none) return;
    fs::path base = slot->parent;
    if (!instance_of.count(base)) {
      fs::path dir = base / name;
      if (::mkdir(dir.c_str(), 0755) != 0) {
        layout.problem += (layout.problem.empty() ? "" : "; ") + std::string("could not create ") +
                          dir.string() + " (" + std::strerror(errno) + ")";
        slot->version = CgroupVersion::none;
        return;
      }
      instance_of[base] = dir;
      if (std::find(layout.bases.begin(), layout.bases.end(), base) == layout.bases.end())
        layout.bases.push_back(base);
      // v2 children get only what their parent enables for them.
      if (slot->version == CgroupVersion::v2) {
        for (const auto& c : wanted) {
          if (!v2.controllers.count(c)) continue;
          try {
            write_file(dir / "cgroup.subtree_control", "+" + c);
          } catch (const std::system_error& e) {
            layout.problem += std::string(layout.problem.empty() ? "" : "; ") + e.what();
          }
        }
      }
    }
    slot->parent = instance_of[base];
  };
  for (auto* slot : {&layout.killer, &layout.memory, &layout.pids, &layout.cpu, &layout.cpuacct})
    make_instance(slot);
  // Kernels before 5.14 have no cgroup.kill: the v1 freezer, where mounted, does the killing.
  if (layout.killer.version == CgroupVersion::v2 &&
      !fs::exists(layout.killer.parent / "cgroup.kill")) {
    layout.killer = v1_place("freezer");
    make_instance(&layout.killer);
  }

  if (layout.memory.version != CgroupVersion::none) {
    fs::path base = layout.memory.parent.parent_path();
    layout.memory_limit_above = tightest_memory_limit(base, layout.memory.version);
    if (known_limit > 0 &&
        (layout.memory_limit_above == 0 || known_limit < layout.memory_limit_above))
      layout.memory_limit_above = known_limit;
    if (layout.memory_limit_above > 0) {
      std::uint64_t limit = layout.memory_limit_above;
      layout.memory_budget = limit > 2 * gateway_reserve ? limit - gateway_reserve : limit / 2;
      try {
        write_file(layout.memory.parent / memory_limit_file(layout.memory.version),
                   std::to_string(layout.memory_budget));
      } catch (const std::system_error& e) {
        layout.problem += std::string(layout.problem.empty() ? "" : "; ") + e.what();
        layout.memory_budget = 0;
      }
    }
  }
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
    if (p.version != CgroupVersion::none) out << "(" << p.parent.parent_path().string() << ")";
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

std::uint64_t CgroupLayout::sandbox_memory_bytes() const {
  if (memory.version == CgroupVersion::none) return 0;
  auto text = read_file(memory.parent / memory_usage_file(memory.version));
  return text ? std::stoull(*text) : 0;
}

void CgroupLayout::release() {
  std::vector<fs::path> dirs;
  for (auto* slot : {&killer, &memory, &pids, &cpu, &cpuacct}) {
    if (slot->version == CgroupVersion::none) continue;
    if (std::find(dirs.begin(), dirs.end(), slot->parent) == dirs.end())
      dirs.push_back(slot->parent);
    slot->version = CgroupVersion::none;
  }
  kill_and_remove(dirs);
  if (!bases.empty()) {
    bases.clear();
    // Paired with the delegate_v2 of probe() whenever the v2 hierarchy was writable.
    undelegate_v2();
  }
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
    dir_for(layout.killer);
    memory_ = layout.memory;
    cpuacct_ = layout.cpuacct;
    if (auto d = dir_for(layout.memory); !d.empty()) {
      memory_.parent = d;
      std::string bytes = std::to_string(limits.memory_bytes);
      write_file(d / memory_limit_file(layout.memory.version), bytes);
      if (layout.memory.version == CgroupVersion::v2) {
        if (fs::exists(d / "memory.swap.max")) write_file(d / "memory.swap.max", "0");
      } else if (fs::exists(d / "memory.memsw.limit_in_bytes")) {
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
    if (cpuacct_.version != CgroupVersion::none)
      cpu_usage_ = StatFile(cpuacct_.parent /
                            (cpuacct_.version == CgroupVersion::v1 ? "cpuacct.usage" : "cpu.stat"));
    if (memory_.version != CgroupVersion::none) {
      memory_usage_ = StatFile(memory_.parent / memory_usage_file(memory_.version));
      memory_peak_ = StatFile(memory_.parent / memory_peak_file(memory_.version), true);
      oom_events_ =
          StatFile(memory_.parent /
                   (memory_.version == CgroupVersion::v2 ? "memory.events" : "memory.oom_control"));
    }
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
  auto text = cpu_usage_.read();
  if (!text) return 0;
  if (cpuacct_.version == CgroupVersion::v1) return std::strtoull(text->c_str(), nullptr, 10);
  return keyed_value(*text, "usage_usec").value_or(0) * 1000;
}

std::uint64_t CgroupSet::memory_bytes() const {
  auto text = memory_usage_.read();
  return text ? std::strtoull(text->c_str(), nullptr, 10) : 0;
}

std::uint64_t CgroupSet::memory_peak_since_last() {
  auto text = memory_peak_.read();
  if (!text) return 0;
  std::uint64_t peak = std::strtoull(text->c_str(), nullptr, 10);
  if (peak_resettable_) {
    // The watermark restarts at the usage now (v2: for reads through this descriptor, which
    // is why it stays open), so the next read covers exactly the next interval.
    if (memory_peak_.write("0\n")) return peak;
    peak_resettable_ = false;  // v2 before Linux 6.12: the peak since creation, read-only
  }
  // A watermark since creation says what the interval's peak was only when it rose in it.
  std::uint64_t rose = peak > last_peak_ ? peak : 0;
  last_peak_ = std::max(last_peak_, peak);
  return rose;
}

std::uint64_t CgroupSet::oom_kills() const {
  auto text = oom_events_.read();
  return text ? keyed_value(*text, "oom_kill").value_or(0) : 0;
}

void CgroupSet::remove() {
  for (auto* file : {&cpu_usage_, &memory_usage_, &oom_events_, &memory_peak_}) file->close();
  kill_and_remove(dirs_);
  dirs_.clear();
}

int sweep_orphan_cgroups(const CgroupLayout& layout) {
  std::vector<fs::path> orphans;
  for (const auto& base : layout.bases) {
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(base, ec)) {
      std::string name = entry.path().filename().string();
      if (!entry.is_directory() || name.rfind(kPrefix, 0) != 0) continue;
      // The v2 leaf holds a gateway process (this one, or another in the same cgroup).
      if (name == std::string(kPrefix) + "gateway") continue;
      if (owner_alive(name)) continue;
      orphans.push_back(entry.path());
    }
  }
  kill_and_remove(orphans);
  return static_cast<int>(orphans.size());
}

}  // namespace sandgate::sandbox
