#include "cgroup_delegation.hpp"

#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <mutex>
#include <sstream>
#include <system_error>

#include "cgroup2_view.hpp"
#include "cgroup_tree.hpp"
#include "sandbox/file_util.hpp"

namespace sandgate::sandbox {
namespace fs = std::filesystem;

namespace {

constexpr const char* kLeaf = "sandgate-gateway";
constexpr const char* kFix =
    "run sandgate in a cgroup of its own: as a systemd service with Delegate=yes "
    "(deploy/systemd/sandgate.service) or in a container (docs/operations.md)";

constexpr const char* kUnmappedFix =
    "its owner is not mapped in the gateway's user namespace, so the container runtime did not "
    "hand the cgroup to the container's root. runc 1.1 does that only when the cgroup fs is "
    "mounted read-write; with containerd and runc run the pod with hostUsers: true, or use crun "
    "(docs/operations.md)";

// Whether `dir` belongs to a user our user namespace does not map (shown as the overflow uid).
bool owner_unmapped(const fs::path& dir) {
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) return false;
  auto overflow = read_file("/proc/sys/kernel/overflowuid");
  return overflow && st.st_uid == static_cast<uid_t>(std::stoul(*overflow));
}

// What this process changed, shared by every delegation in it.
struct State {
  std::mutex mutex;
  int users = 0;
  fs::path own;
  bool moved = false;    // this process moved itself into the leaf (and moves back at the end)
  bool in_leaf = false;  // it sits in the leaf, moved or started there
  std::vector<std::string> enabled;  // in the order they were enabled
};

State& state() {
  static State s;
  return s;
}

std::string errno_text(int e) {
  return std::string(std::strerror(e));
}

// Mounts a fresh cgroup2 over `point`. Without a user namespace of its own (hostUsers: true)
// the container's read-only mount has the same superblock and root as the new one, and the
// kernel refuses to stack a mount on itself (EBUSY): an empty tmpfs between the two avoids that.
bool mount_fresh_cgroup2(const fs::path& point) {
  constexpr unsigned long kFlags = MS_NOSUID | MS_NODEV | MS_NOEXEC;
  if (::mount("cgroup2", point.c_str(), "cgroup2", kFlags, nullptr) == 0) return true;
  if (errno != EBUSY) return false;
  if (::mount("sandgate-spacer", point.c_str(), "tmpfs", kFlags, "size=4k,mode=0755") != 0) {
    errno = EBUSY;
    return false;
  }
  if (::mount("cgroup2", point.c_str(), "cgroup2", kFlags, nullptr) == 0) return true;
  int error = errno;
  ::umount2(point.c_str(), MNT_DETACH);
  errno = error;
  return false;
}

// This process's v2 cgroup as /proc/self/cgroup names it ("0::PATH"), or empty.
std::string own_v2_cgroup() {
  std::istringstream in(read_file("/proc/self/cgroup").value_or(""));
  for (std::string line; std::getline(in, line);)
    if (line.rfind("0::", 0) == 0) return line.substr(3);
  return "";
}

// The writable view of cgroup2_view.hpp, made once per process and kept for its lifetime (the
// sandboxes' cgroups are reached through it).
struct View {
  std::mutex mutex;
  UniqueFd fd;
  std::string root;      // the cgroup at the view's root, as /proc/self/cgroup names cgroups
  bool in_leaf = false;  // borrowed from a running gateway whose leaf this process is in
};

View& view() {
  static View v;
  return v;
}

// When mounting a fresh cgroup2 here was refused (`mount_error`; no CAP_SYS_ADMIN over this
// mount namespace, as in a pod under Pod Security "baseline"): the view from a user namespace
// of our own. Fills `out` and returns true, or says in d.problem what was refused.
bool use_view(CgroupMount& out, V2Delegation& d, int mount_error, const std::string& what) {
  View& v = view();
  std::lock_guard lock(v.mutex);
  if (!v.fd) {
    std::string own = own_v2_cgroup();
    Cgroup2View made;
    if (fs::path(own).filename() == kLeaf) {
      made = borrow_gateway_cgroup2_view(own);
      v.root = fs::path(own).parent_path().string();
      v.in_leaf = true;
    } else {
      made = cgroup2_view_from_own_namespaces();
      v.root = own;
    }
    if (!made.fd) {
      d.problem =
          what + " (" + errno_text(mount_error) + ") and " + made.problem +
          ": allow unshare(CLONE_NEWUSER) and fsopen/fsmount with the seccomp profile " +
          "deploy/k8s/security-profiles/sandgate.json (Localhost), or grant CAP_SYS_ADMIN " +
          "(deploy/k8s/privileged/; docs/operations.md)";
      return false;
    }
    v.fd = std::move(made.fd);
  }
  out = CgroupMount{};
  out.root = v.root.empty() ? "/" : v.root;
  out.point = descriptor_path(v.fd.get());
  out.fstype = "cgroup2";
  d.note = v.in_leaf ? "reached the cgroup through the running gateway's view of it"
                     : "reached the cgroup through a cgroup2 mount made in a user namespace of "
                       "the gateway's own (no CAP_SYS_ADMIN here)";
  return true;
}

bool view_in_use() {
  View& v = view();
  std::lock_guard lock(v.mutex);
  return static_cast<bool>(v.fd);
}

bool view_in_leaf() {
  View& v = view();
  std::lock_guard lock(v.mutex);
  return v.fd && v.in_leaf;
}

// A mount refused for want of a privilege: by the capability check or seccomp (EPERM), or by
// an LSM such as AppArmor (EACCES).
bool refused(int error) {
  return error == EPERM || error == EACCES;
}

// The top-most cgroup2 mount, remounted fresh when it is read-only, or mounted where a container
// has none at all, or reached through a view (above) where mounting is refused. Returns false
// when there is no v2 hierarchy.
bool find_v2(CgroupMount& out, V2Delegation& d) {
  if (view_in_use()) return use_view(out, d, EPERM, "");
  bool any_v1 = false;
  for (const auto& m : cgroup_mounts()) {
    if (m.fstype == "cgroup2") out = m;
    any_v1 = any_v1 || m.fstype == "cgroup";
  }
  if (out.fstype != "cgroup2") {
    // Some runtimes give a user-namespaced container no cgroup mount; its cgroup namespace
    // still has a root of its own to mount.
    const fs::path standard = "/sys/fs/cgroup";
    if (any_v1 || !fs::is_directory(standard)) return false;
    if (!mount_fresh_cgroup2(standard)) {
      int error = errno;
      if (refused(error)) {
        use_view(out, d, error,
                 "no cgroup filesystem is mounted and mounting cgroup2 at " + standard.string() +
                     " was refused");
        return true;
      }
      d.problem = "no cgroup filesystem is mounted and mounting cgroup2 at " + standard.string() +
                  " failed (" + errno_text(error) +
                  "): the gateway needs CAP_SYS_ADMIN in its container (docs/operations.md)";
      return true;
    }
    d.note = "mounted cgroup2 at " + standard.string() + " (none was mounted)";
    for (const auto& m : cgroup_mounts())
      if (m.fstype == "cgroup2" && m.point == standard) out = m;
    return out.fstype == "cgroup2";
  }
  if (!out.read_only) return true;
  // Kubernetes mounts the cgroup fs read-only in a container; with CAP_SYS_ADMIN over the
  // container's mount namespace, a fresh mount of the container's own cgroup namespace is
  // writable wherever the runtime gave the container's root its cgroup.
  if (!mount_fresh_cgroup2(out.point)) {
    int error = errno;
    if (refused(error)) {
      use_view(out, d, error,
               "the cgroup filesystem at " + out.point.string() +
                   " is mounted read-only and mounting a fresh cgroup2 over it was refused");
      return true;
    }
    d.problem = "the cgroup filesystem at " + out.point.string() +
                " is mounted read-only and mounting a fresh cgroup2 over it failed (" +
                errno_text(error) +
                "): the gateway needs CAP_SYS_ADMIN in its container (docs/operations.md)";
    return true;
  }
  d.note = "mounted a fresh cgroup2 over the read-only " + out.point.string();
  for (const auto& m : cgroup_mounts())
    if (m.fstype == "cgroup2" && m.point == out.point) out = m;
  return true;
}

// Moves this process into own/sandgate-gateway unless it already is there.
bool move_into_leaf(State& s, V2Delegation& d) {
  if (s.in_leaf) return true;
  fs::path leaf = s.own / kLeaf;
  if (::mkdir(leaf.c_str(), 0755) != 0 && errno != EEXIST) {
    int error = errno;
    d.problem = "could not create " + leaf.string() + " (" + errno_text(error) + "): " + kFix;
    return false;
  }
  try {
    write_file(leaf / "cgroup.procs", "0");
  } catch (const std::system_error& e) {
    d.problem = "could not move the gateway into " + leaf.string() + " (" + e.what() + "): " + kFix;
    return false;
  }
  s.moved = s.in_leaf = true;
  d.note += std::string(d.note.empty() ? "" : "; ") + "the gateway moved into " + leaf.string();
  return true;
}

}  // namespace

V2Delegation delegate_v2(const std::vector<std::string>& wanted) {
  V2Delegation d;
  CgroupMount mount;
  if (!find_v2(mount, d) || !d.problem.empty()) return d;
  State& s = state();
  std::lock_guard lock(s.mutex);
  if (s.users == 0) {
    s.own = own_cgroup_dir(mount, "");
    // Started inside a running gateway's leaf (`kubectl exec … sandgate --check-isolation`
    // lands there): its parent is the delegated cgroup, and this process is already a leaf's.
    s.in_leaf = s.own.filename() == kLeaf || view_in_leaf();
    if (s.own.filename() == kLeaf) s.own = s.own.parent_path();
  }
  d.own = s.own;
  if (int error = child_cgroup_error(d.own); error != 0) {
    d.problem = "the gateway's cgroup " + d.own.string() + " is not writable (" +
                errno_text(error) + "): " + (owner_unmapped(d.own) ? kUnmappedFix : kFix);
    return d;
  }
  d.writable = true;
  ++s.users;

  auto available = words(read_file(d.own / "cgroup.controllers").value_or(""));
  auto subtree = words(read_file(d.own / "cgroup.subtree_control").value_or(""));
  // The root cgroup has no cgroup.type and may have members and delegated controllers at once.
  bool is_root = !fs::exists(d.own / "cgroup.type");
  for (const auto& c : wanted) {
    if (!available.count(c) || subtree.count(c)) continue;
    if (!is_root && !move_into_leaf(s, d)) break;
    try {
      write_file(d.own / "cgroup.subtree_control", "+" + c);
      s.enabled.push_back(c);
    } catch (const std::system_error& e) {
      int code = e.code().value();
      auto others = cgroup_procs(d.own);
      d.problem =
          code == EBUSY && !others.empty()
              ? "the gateway's cgroup " + d.own.string() + " holds " +
                    std::to_string(others.size()) +
                    " other process(es), so it cannot hand controllers to sandboxes: " + kFix
              : "could not enable the " + c + " controller in " + d.own.string() + " (" +
                    errno_text(code) + "): " + kFix;
      break;
    }
  }
  subtree = words(read_file(d.own / "cgroup.subtree_control").value_or(""));
  for (const auto& c : wanted)
    if (subtree.count(c)) d.controllers.insert(c);
  // An empty leaf left by an earlier gateway that this one does not need.
  if (!s.in_leaf) ::rmdir((d.own / kLeaf).c_str());
  return d;
}

void undelegate_v2() {
  State& s = state();
  std::lock_guard lock(s.mutex);
  if (s.users == 0 || --s.users > 0) return;
  for (auto it = s.enabled.rbegin(); it != s.enabled.rend(); ++it) {
    try {
      write_file(s.own / "cgroup.subtree_control", "-" + *it);
    } catch (const std::system_error&) {
    }
  }
  s.enabled.clear();
  if (s.moved) {
    try {
      write_file(s.own / "cgroup.procs", "0");
      ::rmdir((s.own / kLeaf).c_str());
      s.moved = s.in_leaf = false;
    } catch (const std::system_error&) {
      // Still enabled by someone else: the leaf stays, empty once we exit, reused next start.
    }
  }
}

}  // namespace sandgate::sandbox
