// CgroupLayout: where this gateway's sandboxes get their cgroups (the probe at start, its
// instance directories and the sandboxes' shared memory budget), and its release at the end.
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <sstream>
#include <system_error>

#include "cgroup_delegation.hpp"
#include "cgroup_files.hpp"
#include "cgroup_instance.hpp"
#include "cgroup_kill.hpp"
#include "cgroup_tree.hpp"
#include "cgroups.hpp"
#include "sandbox/file_util.hpp"

namespace sandgate::sandbox {
namespace fs = std::filesystem;

namespace {

constexpr std::uint64_t kNoLimit = 1ull << 60;  // v1 reports "no limit" as a huge number

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

const std::vector<std::string> kWantedControllers = {"memory", "pids", "cpu"};

void add_problem(std::string& problems, const std::string& problem) {
  problems += (problems.empty() ? "" : "; ") + problem;
}

// Where a v1 controller can hold sandboxes: the gateway's own cgroup of its hierarchy, if
// children can be made there.
ControllerPlace v1_place(const std::vector<CgroupMount>& mounts, const std::string& v1_name) {
  for (const auto& m : mounts) {
    if (m.fstype != "cgroup" || !has_mount_option(m.options, v1_name)) continue;
    fs::path dir = own_cgroup_dir(m, v1_name);
    if (child_cgroup_error(dir) == 0) return {CgroupVersion::v1, dir};
    return {};
  }
  return {};
}

// Each controller where it is: the v2 hierarchy when it carries it, else its v1 hierarchy.
void place_controllers(CgroupLayout& layout, const V2Delegation& v2,
                       const std::vector<CgroupMount>& mounts) {
  auto place = [&](ControllerPlace& slot, const std::string& v2_name, const std::string& v1_name) {
    if (v2.controllers.count(v2_name))
      slot = {CgroupVersion::v2, v2.own};
    else
      slot = v1_place(mounts, v1_name);
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
}

// This gateway's instance directories: one per hierarchy, shared by the controllers that
// hierarchy carries.
class InstanceDirs {
 public:
  InstanceDirs(CgroupLayout& layout, const V2Delegation& v2)
      : layout_(layout), v2_(v2), name_(instance_name()) {}

  // Moves `slot` from the gateway's cgroup to its instance directory, made on first use (a
  // slot whose directory cannot be made is dropped, with the reason in layout.problem).
  void move_into_instance(ControllerPlace& slot) {
    if (slot.version == CgroupVersion::none) return;
    fs::path base = slot.parent;
    if (!instance_of_.count(base) && !make(base, slot.version)) {
      slot.version = CgroupVersion::none;
      return;
    }
    slot.parent = instance_of_[base];
  }

 private:
  bool make(const fs::path& base, CgroupVersion version) {
    fs::path dir = base / name_;
    if (::mkdir(dir.c_str(), 0755) != 0) {
      add_problem(layout_.problem,
                  "could not create " + dir.string() + " (" + std::strerror(errno) + ")");
      return false;
    }
    instance_of_[base] = dir;
    if (std::find(layout_.bases.begin(), layout_.bases.end(), base) == layout_.bases.end())
      layout_.bases.push_back(base);
    // v2 children get only what their parent enables for them.
    if (version == CgroupVersion::v2) {
      for (const auto& c : kWantedControllers) {
        if (!v2_.controllers.count(c)) continue;
        try {
          write_file(dir / "cgroup.subtree_control", "+" + c);
        } catch (const std::system_error& e) {
          add_problem(layout_.problem, e.what());
        }
      }
    }
    return true;
  }

  CgroupLayout& layout_;
  const V2Delegation& v2_;
  const std::string name_;
  std::map<fs::path, fs::path> instance_of_;
};

// The sandboxes' shared memory budget: the tightest limit above the gateway (or the one the
// deployment states) less the gateway's reserve, written on the memory instance directory.
void cap_sandboxes_memory(CgroupLayout& layout, std::uint64_t gateway_reserve,
                          std::uint64_t known_limit) {
  if (layout.memory.version == CgroupVersion::none) return;
  fs::path base = layout.memory.parent.parent_path();
  layout.memory_limit_above = tightest_memory_limit(base, layout.memory.version);
  if (known_limit > 0 &&
      (layout.memory_limit_above == 0 || known_limit < layout.memory_limit_above))
    layout.memory_limit_above = known_limit;
  if (layout.memory_limit_above == 0) return;
  std::uint64_t limit = layout.memory_limit_above;
  layout.memory_budget = limit > 2 * gateway_reserve ? limit - gateway_reserve : limit / 2;
  try {
    write_file(layout.memory.parent / memory_limit_file(layout.memory.version),
               std::to_string(layout.memory_budget));
  } catch (const std::system_error& e) {
    add_problem(layout.problem, e.what());
    layout.memory_budget = 0;
  }
}

}  // namespace

CgroupLayout CgroupLayout::probe(std::uint64_t gateway_reserve, std::uint64_t known_limit) {
  CgroupLayout layout;
  V2Delegation v2 = delegate_v2(kWantedControllers);
  layout.notes = v2.note;
  layout.problem = v2.problem;
  if (v2.writable) layout.bases.push_back(v2.own);

  auto mounts = cgroup_mounts();
  place_controllers(layout, v2, mounts);
  InstanceDirs instances(layout, v2);
  for (auto* slot : {&layout.killer, &layout.memory, &layout.pids, &layout.cpu, &layout.cpuacct})
    instances.move_into_instance(*slot);
  // Kernels before 5.14 have no cgroup.kill: the v1 freezer, where mounted, does the killing.
  if (layout.killer.version == CgroupVersion::v2 &&
      !fs::exists(layout.killer.parent / "cgroup.kill")) {
    layout.killer = v1_place(mounts, "freezer");
    instances.move_into_instance(layout.killer);
  }
  cap_sandboxes_memory(layout, gateway_reserve, known_limit);
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

}  // namespace sandgate::sandbox
