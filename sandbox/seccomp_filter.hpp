#pragma once
// The last layer before exec: a seccomp filter (libseccomp) that refuses network sockets and the
// system calls a sandboxed program never needs and an attacker would (mount, ptrace, bpf, …).

namespace sandgate::sandbox {

// Loads the filter into the calling process. Returns 0 or a negative errno from libseccomp.
int install_seccomp_filter();

}  // namespace sandgate::sandbox
