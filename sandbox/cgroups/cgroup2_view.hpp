#pragma once
// A writable view of the gateway's own v2 cgroup without CAP_SYS_ADMIN in the gateway's user
// namespace (a pod admitted under the Pod Security "baseline" level, which never grants it).
//
// A container runtime mounts the cgroup fs read-only in a pod; a fresh cgroup2 mount over it
// is writable, but mounting needs CAP_SYS_ADMIN over the pod's mount namespace. A short-lived
// child gets that in a user namespace of its own (creating one needs no capability) with its
// own mount and cgroup namespaces: there it makes a detached cgroup2 mount (fsopen + fsmount)
// whose root is its cgroup, the gateway's, and hands the descriptor back. The gateway reaches
// its cgroup through /proc/self/fd/N with its own credentials: the kernel checks each write
// against the writer (the pod's root, to whom the runtime gave the container's cgroup) and the
// writer's cgroup namespace, not against the user namespace that made the mount.
#include <string>

#include "common/unique_fd.hpp"

namespace sandgate::sandbox {

struct Cgroup2View {
  UniqueFd fd;          // the detached mount's root (close-on-exec); invalid on failure
  std::string problem;  // on failure: which step the kernel refused, with its errno
};

// Made in a child's own user, mount and cgroup namespaces, rooted at this process's cgroup.
Cgroup2View cgroup2_view_from_own_namespaces();

// For a process started inside a running gateway's leaf (`kubectl exec … sandgate
// --check-isolation`): its own view would be rooted at the leaf, so it takes the gateway's,
// rooted at the gateway's delegated cgroup, from /proc/PID/fd of a process that shares its
// cgroup (the same uid and capabilities may open another's descriptors). `own_cgroup` is this
// process's v2 cgroup path from /proc/self/cgroup.
Cgroup2View borrow_gateway_cgroup2_view(const std::string& own_cgroup);

// The path through which a descriptor's directory is reached ("/proc/self/fd/N").
std::string descriptor_path(int fd);

}  // namespace sandgate::sandbox
