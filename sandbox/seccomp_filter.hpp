#pragma once
// The last layer before exec: a seccomp filter (libseccomp) that refuses network sockets and the
// system calls a sandboxed program never needs and an attacker would (mount, ptrace, bpf, …).

#include <linux/filter.h>

#include <vector>

namespace sandgate::sandbox {

// The filter compiled once (libseccomp's compile costs a few hundred microseconds, too much
// to pay on every call) and loaded, ready-made, into each program.
class SeccompProgram {
 public:
  // Throws std::system_error when libseccomp cannot build it.
  static SeccompProgram compile();
  // In the program's process, after no_new_privs. Returns 0 or errno.
  int install() const;

 private:
  std::vector<sock_filter> code_;
};

}  // namespace sandgate::sandbox
