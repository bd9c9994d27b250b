#pragma once
// Turns a process of the sandbox into an unprivileged program: its own uid/gid, no capabilities,
// no way to regain them (no_new_privs), and bounded core/file-descriptor limits.
#include <sys/types.h>

namespace sandgate::sandbox {

// Reads /proc/sys/kernel/cap_last_cap; call before forking (it allocates).
int last_capability();

// Async-signal-safe enough for a freshly forked child: raw syscalls only. Returns 0 or errno.
int drop_privileges(uid_t uid, gid_t gid, int last_cap);

}  // namespace sandgate::sandbox
