#include "privileges.hpp"

#include <linux/capability.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

#include "sandbox/file_util.hpp"

namespace sandgate::sandbox {

int last_capability() {
  auto text = read_file("/proc/sys/kernel/cap_last_cap");
  return text ? std::atoi(text->c_str()) : CAP_LAST_CAP;
}

bool setgroups_allowed() {
  return read_file("/proc/self/setgroups").value_or("allow") != "deny\n";
}

int drop_privileges(uid_t uid, gid_t gid, int last_cap, bool drop_groups) {
  // The bounding set first: dropping it needs CAP_SETPCAP, which the uid change takes away.
  for (int cap = 0; cap <= last_cap; ++cap) {
    if (::prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 && errno != EINVAL) return errno;
  }
  if (drop_groups && ::syscall(SYS_setgroups, 0, nullptr) != 0) return errno;
  if (::syscall(SYS_setresgid, gid, gid, gid) != 0) return errno;
  if (::syscall(SYS_setresuid, uid, uid, uid) != 0) return errno;
  if (::prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0 && errno != EINVAL)
    return errno;
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3] = {};
  if (::syscall(SYS_capset, &header, data) != 0) return errno;
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return errno;
  struct rlimit no_core {
    0, 0
  };
  ::setrlimit(RLIMIT_CORE, &no_core);
  return 0;
}

}  // namespace sandgate::sandbox
