#pragma once
// Turns a process of the sandbox into an unprivileged program: its own uid/gid, no capabilities,
// no way to regain them (no_new_privs), and bounded core/file-descriptor limits.
#include <sys/types.h>

namespace sandgate::sandbox {

// Reads /proc/sys/kernel/cap_last_cap; call before forking (it allocates).
int last_capability();

// Whether this process may call setgroups: not in a user namespace whose gid map an
// unprivileged gateway wrote (it had to write "deny" to /proc/PID/setgroups first). Reads a
// file: call before forking.
bool setgroups_allowed();

// Async-signal-safe enough for a freshly forked child: raw syscalls only. Returns 0 or errno.
// Without `drop_groups` the supplementary groups stay as they are (the kernel refuses a change).
int drop_privileges(uid_t uid, gid_t gid, int last_cap, bool drop_groups);

}  // namespace sandgate::sandbox
