#pragma once
// What creating a sandbox asks of the kernel and of the container's security profiles, tried
// once in a throwaway child: a user namespace with pid, network, mount, IPC and UTS namespaces
// (refused by the runtimes' RuntimeDefault seccomp profiles without CAP_SYS_ADMIN), a mount in
// it (refused by containerd's default AppArmor profile), and a fresh /proc for its pid
// namespace (refused under a masked /proc). Each refusal is named with the setting or shipped
// profile that grants it, so `sandgate --check-isolation` tells an operator what to change.
#include <string>

namespace sandgate::sandbox {

// The steps the probe takes, in order.
enum class NamespaceStep { none, create_namespaces, mount, mount_proc, probe };

struct NamespaceProbe {
  NamespaceStep refused = NamespaceStep::none;  // the first step that failed
  int error = 0;                                // its errno
};

NamespaceProbe probe_sandbox_namespaces();

// "" when nothing was refused, else the missing permission and what grants it.
std::string namespace_problem(const NamespaceProbe& probe);

}  // namespace sandgate::sandbox
