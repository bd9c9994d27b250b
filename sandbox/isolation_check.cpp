#include "isolation_check.hpp"

#include <sys/prctl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <sstream>

#include "file_util.hpp"
#include "namespace_probe.hpp"
#include "sandbox/cgroups/cgroups.hpp"
#include "sandbox/inside/landlock.hpp"

namespace sandgate::sandbox {

namespace {

bool user_namespaces_available() {
  auto max = read_file("/proc/sys/user/max_user_namespaces");
  return max && std::atoi(max->c_str()) > 0;
}

// Whether ids [first, first + count) exist in our user namespace (/proc/self/uid_map: "inside
// outside count" per line). A user-namespaced pod maps only 65536 of them.
bool ids_mapped_in(std::uint64_t first, std::uint64_t count, const std::string& id_map) {
  std::istringstream map(id_map);
  std::uint64_t inside = 0, outside = 0, length = 0, covered_to = first;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> ranges;
  while (map >> inside >> outside >> length) ranges.emplace_back(inside, inside + length);
  std::sort(ranges.begin(), ranges.end());
  for (const auto& [from, to] : ranges)
    if (from <= covered_to && to > covered_to) covered_to = to;
  return covered_to >= first + count;
}

bool ids_mapped(std::uint64_t first, std::uint64_t count, const char* map_file) {
  return ids_mapped_in(first, count, read_file(map_file).value_or(""));
}

bool initial_user_namespace(const std::string& uid_map) {
  std::istringstream in(uid_map);
  std::uint64_t inside = 1, outside = 1, length = 0;
  std::string more;
  return in >> inside >> outside >> length && inside == 0 && outside == 0 &&
         length == 4294967295ull && !(in >> more);
}

}  // namespace

IsolationReport assess_isolation(const HostConfig& config) {
  IsolationReport r;
  r.cgroups = std::make_unique<CgroupLayout>();
  r.user_namespaces = user_namespaces_available();
  r.privileged = ::geteuid() == 0;
  r.seccomp = ::prctl(PR_GET_SECCOMP, 0, 0, 0, 0) >= 0;
  r.landlock_abi = landlock_abi_version();
  // A host that may run no sandbox (a harness around the HTTP layer) leaves the cgroups alone:
  // the probe creates directories that only an orderly exit removes.
  if (config.max_sandboxes == 0) {
    r.mode = "refused";
    r.problem = "this gateway runs no sandboxes (max_sandboxes is 0)";
    return r;
  }
  *r.cgroups = CgroupLayout::probe(config.gateway_memory_reserve, config.memory_limit);
  if (!r.user_namespaces) {
    r.mode = "refused";
    r.problem = "user namespaces are not available (/proc/sys/user/max_user_namespaces is 0)";
  } else if (!r.seccomp) {
    r.mode = "refused";
    r.problem = "seccomp is not available in this kernel";
  } else if (auto refused = namespace_problem(probe_sandbox_namespaces()); !refused.empty()) {
    r.mode = "refused";
    r.problem = refused;
  } else if (auto dumpable =
                 suid_dumpable_problem(read_file("/proc/sys/fs/suid_dumpable").value_or(""));
             r.privileged && !dumpable.empty()) {
    r.mode = "refused";
    r.problem = dumpable;
  } else if (auto problem =
                 uid_base_problem(config.uid_base, read_file("/proc/self/uid_map").value_or(""));
             r.privileged && !problem.empty()) {
    r.mode = "refused";
    r.problem = problem;
  } else if (r.privileged &&
             !(ids_mapped(config.uid_base, 2ull * config.max_sandboxes, "/proc/self/uid_map") &&
               ids_mapped(config.uid_base, 2ull * config.max_sandboxes, "/proc/self/gid_map"))) {
    r.mode = "refused";
    r.problem = "the sandboxes' host ids [" + std::to_string(config.uid_base) + ", " +
                std::to_string(config.uid_base + 2ull * config.max_sandboxes) +
                ") are not all mapped in the gateway's user namespace (/proc/self/uid_map): set "
                "--sandbox-uid-base and --max-sandboxes to fit (a user-namespaced pod has 65536 "
                "ids)";
  } else if (r.cgroups->complete()) {
    r.mode = "full";
  } else if (config.accept_no_cgroups) {
    r.mode = "no-cgroups";
  } else {
    r.mode = "refused";
    r.problem = "no writable cgroup for every controller (" + r.cgroups->describe() + ")" +
                (r.cgroups->problem.empty() ? "" : ": " + r.cgroups->problem) +
                "; or run with --accept-isolation=no-cgroups to accept sandboxes without "
                "memory/CPU/process limits and spend metering";
  }
  return r;
}

std::uint32_t automatic_uid_base(std::uint32_t max_sandboxes, const std::string& uid_map,
                                 const std::string& gid_map) {
  constexpr std::uint32_t kOnHost = 1'000'000;
  if (initial_user_namespace(uid_map)) return kOnHost;
  std::uint64_t count = 2ull * max_sandboxes;
  // Candidates: 10000 (clear of the ids a container image's own accounts use), then where each
  // mapped range starts, then 1000.
  std::vector<std::uint64_t> candidates = {10'000};
  std::istringstream map(uid_map);
  std::uint64_t inside = 0, outside = 0, length = 0;
  while (map >> inside >> outside >> length)
    if (inside >= 10'000) candidates.push_back(inside);
  std::sort(candidates.begin() + 1, candidates.end());
  candidates.push_back(1'000);
  for (std::uint64_t base : candidates)
    if (base + count <= 4'000'000'000ull && ids_mapped_in(base, count, uid_map) &&
        ids_mapped_in(base, count, gid_map))
      return static_cast<std::uint32_t>(base);
  return kOnHost;  // nothing fits: the isolation check says which ids are missing
}

std::string suid_dumpable_problem(const std::string& setting) {
  if (setting.empty() || setting[0] != '1') return "";
  return "fs.suid_dumpable is 1: a program changing to its uid would be open to the sandbox's "
         "other programs through /proc/PID/mem before its confinement holds; set it to 0 (the "
         "default) or 2 (sysctl fs.suid_dumpable=0)";
}

std::string uid_base_problem(std::uint32_t base, const std::string& uid_map) {
  if (base >= kMinHostUidBase || !initial_user_namespace(uid_map)) return "";
  return "the sandboxes' first host uid " + std::to_string(base) + " is below " +
         std::to_string(kMinHostUidBase) +
         ", among real accounts' ids: on a host (not in a user namespace) set "
         "--sandbox-uid-base to " +
         std::to_string(kMinHostUidBase) + " or more";
}

std::string IsolationReport::to_text() const {
  std::ostringstream out;
  out << "user namespaces: " << (user_namespaces ? "yes" : "no") << "\n"
      << "distinct host uid per sandbox: "
      << (privileged ? "yes (running as root)" : "no (unprivileged: one shared uid)") << "\n"
      << "seccomp: " << (seccomp ? "yes" : "no") << "\n"
      << "landlock: "
      << (landlock_abi > 0
              ? "ABI " + std::to_string(landlock_abi) +
                    " (used: writes only in /work, /tmp, /dev/shm; exec only from /usr, /work)"
              : std::string("no"))
      << "\n"
      << "cgroups: " << cgroups->describe() << "\n";
  if (!cgroups->notes.empty()) out << "cgroup setup: " << cgroups->notes << "\n";
  if (cgroups->memory_budget > 0)
    out << "sandbox memory budget: " << (cgroups->memory_budget >> 20) << " MiB of the "
        << (cgroups->memory_limit_above >> 20) << " MiB limit above the gateway\n";
  out << "mode: " << mode << "\n";
  if (!problem.empty()) out << "problem: " << problem << "\n";
  return out.str();
}

std::string IsolationReport::cgroups_description() const {
  return cgroups->describe();
}

std::string IsolationReport::cgroup_setup() const {
  return cgroups ? cgroups->notes : "";
}

std::uint64_t IsolationReport::sandbox_memory_budget() const {
  return cgroups->memory_budget;
}

}  // namespace sandgate::sandbox
