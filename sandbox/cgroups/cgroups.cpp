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

#include "cgroup_files.hpp"
#include "cgroup_kill.hpp"
#include "sandbox/file_util.hpp"

namespace sandgate::sandbox {
namespace fs = std::filesystem;

namespace {

std::string cpu_quota_line_v2(double cpus) {
  return std::to_string(static_cast<long>(cpus * 100000)) + " 100000";
}

}  // namespace

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
      cpu_ = {layout.cpu.version, d};
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

bool CgroupSet::set_background(bool background) const {
  if (cpu_.version == CgroupVersion::none) return false;
  try {
    if (cpu_.version == CgroupVersion::v2)
      write_file(cpu_.parent / "cpu.weight", background ? "10" : "100");
    else
      write_file(cpu_.parent / "cpu.shares", background ? "102" : "1024");
    return true;
  } catch (const std::system_error&) {
    return false;
  }
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

}  // namespace sandgate::sandbox
