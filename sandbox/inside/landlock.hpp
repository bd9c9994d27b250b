#pragma once
// Landlock, where the kernel has it: another layer under the mount namespace. Programs may
// write only in /work, /tmp, /dev/shm and the harmless /dev nodes, and execute only from /usr
// and /work.
#include "common/unique_fd.hpp"

namespace sandgate::sandbox {

// The kernel's Landlock ABI version; 0 when unavailable.
int landlock_abi_version();

// Built once by the supervisor (after its root is in place); an empty fd when the kernel has
// no Landlock. Throws std::system_error when it has Landlock but the rules cannot be made.
// `layer_writable`: an environment's build, which writes its layer (Limits::layer_writable).
UniqueFd build_landlock_ruleset(bool layer_writable);

// In a program's process, after no_new_privs: confines it to the ruleset. Returns 0 or errno.
int apply_landlock(int ruleset_fd);

}  // namespace sandgate::sandbox
