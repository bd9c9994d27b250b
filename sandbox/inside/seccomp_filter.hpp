#pragma once
// The last layer before exec: a seccomp filter (libseccomp) that allows the system calls the
// runtimes need (an allowlist; anything else gets ENOSYS), only AF_UNIX sockets, clone without
// namespace flags, and refuses outright what an attacker would want (mount, ptrace, bpf, …).

#include <linux/filter.h>

#include <vector>

namespace sandgate::sandbox {

// The filter compiled once (libseccomp's compile costs a few hundred microseconds, too much
// to pay on every call) and loaded, ready-made, into each program.
class SeccompProgram {
 public:
  // Which sockets a program may make. TCP only for a sandbox with egress (Limits::egress): its
  // network namespace has nothing but loopback, where the gateway's proxy listens.
  enum class Sockets { unix_only, unix_and_tcp };
  // Throws std::system_error when libseccomp cannot build it.
  static SeccompProgram compile(Sockets sockets = Sockets::unix_only);
  // In the program's process, after no_new_privs. Returns 0 or errno.
  int install() const;
  // The classic-BPF program, for tests that keep its size and depth in check.
  const std::vector<sock_filter>& code() const { return code_; }

 private:
  std::vector<sock_filter> code_;
  // With TCP sockets: a second filter refusing setsockopt(SOL_TCP, TCP_ULP) (seccomp_filter.cpp).
  std::vector<sock_filter> tcp_code_;
};

}  // namespace sandgate::sandbox
