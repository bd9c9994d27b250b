#pragma once
// Closes every descriptor from `first` up, failing closed: used before exec in the clone child
// (which must not allocate: the gateway is multi-threaded) and in the program's process.
namespace sandgate::sandbox {

// Raw system calls only, no allocation. Tries close_range; where the kernel or a seccomp
// profile refuses it, lists /proc/self/fd (getdents64 into a stack buffer); where /proc is
// unreadable too, closes every number below RLIMIT_NOFILE's hard limit. Returns 0 when no
// descriptor >= `first` can remain open, else the errno of the last way that failed: the
// caller must then not exec.
int close_descriptors_from(int first);

}  // namespace sandgate::sandbox
