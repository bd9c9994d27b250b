#include "seccomp_filter.hpp"

#include <errno.h>
#include <linux/seccomp.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <seccomp.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <system_error>

#include "common/unique_fd.hpp"

namespace sandgate::sandbox {

namespace {

// An allowlist. Anything not named below gets ENOSYS, the answer of a kernel that does not have
// the call: glibc, CPython, libuv and V8 all treat ENOSYS as "fall back to the older call"
// (clone3 → clone, faccessat2 → faccessat, close_range → a loop, io_uring → threads), whereas
// EPERM reads as a real refusal and some of them give up. It also covers every system call
// a future kernel adds, which nobody has reviewed yet.
//
// The list is what python3 (numpy, pandas, matplotlib), node 20 (worker threads,
// child_process, fs, crypto), bash and coreutils were seen to call under strace, inside and
// outside a sandbox, plus the rest of the ordinary POSIX surface their standard libraries
// reach (os.* in Python, fs.* in node): a program should fail because it did something a
// sandbox forbids, never because it chose an equivalent call. The runtimes' exec path itself
// (execve, then the dynamic loader: arch_prctl, set_tid_address, set_robust_list, rseq,
// prlimit64, getrandom, mmap, mprotect) is in it: the filter is loaded just before execve.
constexpr int kAllowed[] = {
    // Processes and threads (clone is filtered below).
    SCMP_SYS(fork), SCMP_SYS(vfork), SCMP_SYS(execve), SCMP_SYS(execveat), SCMP_SYS(exit),
    SCMP_SYS(exit_group), SCMP_SYS(wait4), SCMP_SYS(waitid), SCMP_SYS(set_tid_address),
    SCMP_SYS(set_robust_list), SCMP_SYS(rseq), SCMP_SYS(arch_prctl), SCMP_SYS(prctl),
    SCMP_SYS(futex), SCMP_SYS(futex_waitv), SCMP_SYS(restart_syscall), SCMP_SYS(getpid),
    SCMP_SYS(getppid), SCMP_SYS(gettid), SCMP_SYS(getpgid), SCMP_SYS(setpgid), SCMP_SYS(getpgrp),
    SCMP_SYS(getsid), SCMP_SYS(setsid), SCMP_SYS(pidfd_open), SCMP_SYS(pidfd_send_signal),
    SCMP_SYS(capget),
    // Identity: reading it, and the set* calls a program uses to "drop" to the ids it already
    // has (anything else fails with EPERM: no capabilities).
    SCMP_SYS(getuid), SCMP_SYS(geteuid), SCMP_SYS(getgid), SCMP_SYS(getegid), SCMP_SYS(getresuid),
    SCMP_SYS(getresgid), SCMP_SYS(getgroups), SCMP_SYS(setuid), SCMP_SYS(setgid),
    SCMP_SYS(setreuid), SCMP_SYS(setregid), SCMP_SYS(setresuid), SCMP_SYS(setresgid),
    SCMP_SYS(setgroups), SCMP_SYS(setfsuid), SCMP_SYS(setfsgid),
    // Limits, accounting and scheduling of the program's own processes.
    SCMP_SYS(prlimit64), SCMP_SYS(getrlimit), SCMP_SYS(setrlimit), SCMP_SYS(getrusage),
    SCMP_SYS(times), SCMP_SYS(getpriority), SCMP_SYS(setpriority), SCMP_SYS(ioprio_get),
    SCMP_SYS(ioprio_set), SCMP_SYS(sched_yield), SCMP_SYS(sched_getaffinity),
    SCMP_SYS(sched_setaffinity), SCMP_SYS(sched_getparam), SCMP_SYS(sched_setparam),
    SCMP_SYS(sched_getscheduler), SCMP_SYS(sched_setscheduler), SCMP_SYS(sched_getattr),
    SCMP_SYS(sched_setattr), SCMP_SYS(sched_get_priority_max), SCMP_SYS(sched_get_priority_min),
    SCMP_SYS(sched_rr_get_interval), SCMP_SYS(getcpu),
    // Signals and timers.
    SCMP_SYS(rt_sigaction), SCMP_SYS(rt_sigprocmask), SCMP_SYS(rt_sigreturn),
    SCMP_SYS(rt_sigpending), SCMP_SYS(rt_sigsuspend), SCMP_SYS(rt_sigtimedwait),
    SCMP_SYS(rt_sigqueueinfo), SCMP_SYS(rt_tgsigqueueinfo), SCMP_SYS(sigaltstack),
    SCMP_SYS(signalfd), SCMP_SYS(signalfd4), SCMP_SYS(kill), SCMP_SYS(tkill), SCMP_SYS(tgkill),
    SCMP_SYS(pause), SCMP_SYS(alarm), SCMP_SYS(getitimer), SCMP_SYS(setitimer),
    SCMP_SYS(timer_create), SCMP_SYS(timer_settime), SCMP_SYS(timer_gettime),
    SCMP_SYS(timer_getoverrun), SCMP_SYS(timer_delete), SCMP_SYS(timerfd_create),
    SCMP_SYS(timerfd_settime), SCMP_SYS(timerfd_gettime),
    // Clocks (reading only) and sleeping.
    SCMP_SYS(clock_gettime), SCMP_SYS(clock_getres), SCMP_SYS(clock_nanosleep), SCMP_SYS(nanosleep),
    SCMP_SYS(gettimeofday), SCMP_SYS(time),
    // Memory of the program's own (memory locks are bounded by RLIMIT_MEMLOCK and the cgroup).
    SCMP_SYS(brk), SCMP_SYS(mmap), SCMP_SYS(munmap), SCMP_SYS(mremap), SCMP_SYS(mprotect),
    SCMP_SYS(madvise), SCMP_SYS(mincore), SCMP_SYS(msync), SCMP_SYS(mlock), SCMP_SYS(mlock2),
    SCMP_SYS(munlock), SCMP_SYS(mlockall), SCMP_SYS(munlockall), SCMP_SYS(membarrier),
    SCMP_SYS(pkey_alloc), SCMP_SYS(pkey_free), SCMP_SYS(pkey_mprotect), SCMP_SYS(get_mempolicy),
    SCMP_SYS(set_mempolicy), SCMP_SYS(mbind), SCMP_SYS(memfd_create),
    // System V IPC: private to the sandbox's IPC namespace.
    SCMP_SYS(shmget), SCMP_SYS(shmat), SCMP_SYS(shmdt), SCMP_SYS(shmctl), SCMP_SYS(semget),
    SCMP_SYS(semop), SCMP_SYS(semtimedop), SCMP_SYS(semctl), SCMP_SYS(msgget), SCMP_SYS(msgsnd),
    SCMP_SYS(msgrcv), SCMP_SYS(msgctl),
    // Descriptors and I/O.
    SCMP_SYS(read), SCMP_SYS(write), SCMP_SYS(readv), SCMP_SYS(writev), SCMP_SYS(pread64),
    SCMP_SYS(pwrite64), SCMP_SYS(preadv), SCMP_SYS(pwritev), SCMP_SYS(preadv2), SCMP_SYS(pwritev2),
    SCMP_SYS(open), SCMP_SYS(openat), SCMP_SYS(openat2), SCMP_SYS(creat), SCMP_SYS(close),
    SCMP_SYS(close_range), SCMP_SYS(dup), SCMP_SYS(dup2), SCMP_SYS(dup3), SCMP_SYS(fcntl),
    SCMP_SYS(ioctl), SCMP_SYS(flock), SCMP_SYS(lseek), SCMP_SYS(pipe), SCMP_SYS(pipe2),
    SCMP_SYS(sendfile), SCMP_SYS(splice), SCMP_SYS(tee), SCMP_SYS(copy_file_range), SCMP_SYS(fsync),
    SCMP_SYS(fdatasync), SCMP_SYS(sync_file_range), SCMP_SYS(fadvise64), SCMP_SYS(readahead),
    SCMP_SYS(truncate), SCMP_SYS(ftruncate), SCMP_SYS(fallocate),
    // Waiting on descriptors.
    SCMP_SYS(poll), SCMP_SYS(ppoll), SCMP_SYS(select), SCMP_SYS(pselect6), SCMP_SYS(epoll_create),
    SCMP_SYS(epoll_create1), SCMP_SYS(epoll_ctl), SCMP_SYS(epoll_wait), SCMP_SYS(epoll_pwait),
    SCMP_SYS(epoll_pwait2), SCMP_SYS(eventfd), SCMP_SYS(eventfd2), SCMP_SYS(inotify_init),
    SCMP_SYS(inotify_init1), SCMP_SYS(inotify_add_watch), SCMP_SYS(inotify_rm_watch),
    // Files and directories (Landlock and the read-only mounts decide which ones).
    SCMP_SYS(stat), SCMP_SYS(fstat), SCMP_SYS(lstat), SCMP_SYS(newfstatat), SCMP_SYS(statx),
    SCMP_SYS(statfs), SCMP_SYS(fstatfs), SCMP_SYS(access), SCMP_SYS(faccessat),
    SCMP_SYS(faccessat2), SCMP_SYS(getcwd), SCMP_SYS(chdir), SCMP_SYS(fchdir), SCMP_SYS(mkdir),
    SCMP_SYS(mkdirat), SCMP_SYS(rmdir), SCMP_SYS(rename), SCMP_SYS(renameat), SCMP_SYS(renameat2),
    SCMP_SYS(link), SCMP_SYS(linkat), SCMP_SYS(unlink), SCMP_SYS(unlinkat), SCMP_SYS(symlink),
    SCMP_SYS(symlinkat), SCMP_SYS(readlink), SCMP_SYS(readlinkat), SCMP_SYS(chmod),
    SCMP_SYS(fchmod), SCMP_SYS(fchmodat), SCMP_SYS(chown), SCMP_SYS(fchown), SCMP_SYS(lchown),
    SCMP_SYS(fchownat), SCMP_SYS(umask), SCMP_SYS(utime), SCMP_SYS(utimes), SCMP_SYS(utimensat),
    SCMP_SYS(futimesat), SCMP_SYS(mknod), SCMP_SYS(mknodat), SCMP_SYS(getdents),
    SCMP_SYS(getdents64), SCMP_SYS(getxattr), SCMP_SYS(lgetxattr), SCMP_SYS(fgetxattr),
    SCMP_SYS(listxattr), SCMP_SYS(llistxattr), SCMP_SYS(flistxattr), SCMP_SYS(setxattr),
    SCMP_SYS(lsetxattr), SCMP_SYS(fsetxattr), SCMP_SYS(removexattr), SCMP_SYS(lremovexattr),
    SCMP_SYS(fremovexattr),
    // Sockets (which families socket() and socketpair() may make is decided below).
    SCMP_SYS(bind), SCMP_SYS(connect), SCMP_SYS(listen), SCMP_SYS(accept), SCMP_SYS(accept4),
    SCMP_SYS(getsockname), SCMP_SYS(getpeername), SCMP_SYS(sendto), SCMP_SYS(recvfrom),
    SCMP_SYS(sendmsg), SCMP_SYS(recvmsg), SCMP_SYS(sendmmsg), SCMP_SYS(recvmmsg),
    SCMP_SYS(setsockopt), SCMP_SYS(getsockopt), SCMP_SYS(shutdown),
    // About the system, and randomness.
    SCMP_SYS(uname), SCMP_SYS(sysinfo), SCMP_SYS(getrandom),
    // A program may confine itself further (filters only stack, never loosen).
    SCMP_SYS(seccomp)};

// Refused with EPERM, the answer an unprivileged process gets from most of them anyway, so
// programs report "Operation not permitted" instead of guessing at a fallback. None of these
// is in the allowlist; they are named so that their answer is deliberate and the list says
// what is kept out: namespace and mount games, tracing or reading other processes, kernel
// interfaces with a history of exploits, and host-wide settings.
constexpr int kRefused[] = {
    // Mounts and namespaces.
    SCMP_SYS(mount), SCMP_SYS(umount2), SCMP_SYS(pivot_root), SCMP_SYS(chroot),
    SCMP_SYS(move_mount), SCMP_SYS(open_tree), SCMP_SYS(fsopen), SCMP_SYS(fsconfig),
    SCMP_SYS(fsmount), SCMP_SYS(fspick), SCMP_SYS(mount_setattr), SCMP_SYS(unshare),
    SCMP_SYS(setns),
    // Other processes' memory, descriptors and execution.
    SCMP_SYS(ptrace), SCMP_SYS(process_vm_readv), SCMP_SYS(process_vm_writev),
    SCMP_SYS(pidfd_getfd), SCMP_SYS(kcmp),
    // Kernel attack surface: interfaces a sandboxed program has no use for and exploits do.
    SCMP_SYS(bpf), SCMP_SYS(perf_event_open), SCMP_SYS(userfaultfd), SCMP_SYS(modify_ldt),
    SCMP_SYS(memfd_secret), SCMP_SYS(keyctl), SCMP_SYS(add_key), SCMP_SYS(request_key),
    SCMP_SYS(open_by_handle_at), SCMP_SYS(name_to_handle_at), SCMP_SYS(lookup_dcookie),
    SCMP_SYS(fanotify_init), SCMP_SYS(iopl), SCMP_SYS(ioperm),
    // The kernel itself and host-wide settings.
    SCMP_SYS(kexec_load), SCMP_SYS(kexec_file_load), SCMP_SYS(init_module), SCMP_SYS(finit_module),
    SCMP_SYS(delete_module), SCMP_SYS(swapon), SCMP_SYS(swapoff), SCMP_SYS(reboot),
    SCMP_SYS(syslog), SCMP_SYS(acct), SCMP_SYS(quotactl), SCMP_SYS(vhangup), SCMP_SYS(settimeofday),
    SCMP_SYS(clock_settime), SCMP_SYS(clock_adjtime), SCMP_SYS(adjtimex)};

// Not in either list on purpose, so they get the default ENOSYS, as from a kernel without them,
// and the runtimes fall back (libseccomp refuses a rule whose action is the default one):
// io_uring_setup/enter/register carry operations seccomp never sees (libuv falls back to its
// thread pool); clone3 passes its flags in memory seccomp cannot read (glibc falls back to
// clone, whose flags a rule below checks).

// The namespace flags of clone (all in its low 32 bits; CLONE_NEWTIME only exists for
// clone3 and unshare, and in clone's first argument that bit belongs to the exit signal).
constexpr unsigned long kNamespaceFlags[] = {CLONE_NEWUSER,  CLONE_NEWNS,  CLONE_NEWPID,
                                             CLONE_NEWNET,   CLONE_NEWIPC, CLONE_NEWUTS,
                                             CLONE_NEWCGROUP};

// Spelled out rather than SCMP_A0(): the macro leaves datum_b to zero-fill, which clang's
// -Wmissing-field-initializers rejects.
int rule(scmp_filter_ctx ctx, uint32_t action, int syscall, scmp_compare op, scmp_datum_t a,
         scmp_datum_t b = 0) {
  scmp_arg_cmp cmp{0, op, a, b};
  return seccomp_rule_add_array(ctx, action, syscall, 1, &cmp);
}

int add_lists(scmp_filter_ctx ctx) {
  int rc = 0;
  for (int sc : kAllowed) {
    if ((rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, sc, 0)) != 0) return rc;
  }
  for (int sc : kRefused) {
    if ((rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), sc, 0)) != 0) return rc;
  }
  return 0;
}

// socket(family, type, protocol) with all three compared: a0 == family, (a1 & 0xf) == type and
// a2 `protocol_op` `protocol`.
int socket_rule(scmp_filter_ctx ctx, uint32_t action, scmp_datum_t family, scmp_datum_t type,
                scmp_compare protocol_op, scmp_datum_t protocol) {
  scmp_arg_cmp cmp[] = {{0, SCMP_CMP_EQ, family, 0},
                        {1, SCMP_CMP_MASKED_EQ, 0xf, type},
                        {2, protocol_op, protocol, 0}};
  return seccomp_rule_add_array(ctx, action, SCMP_SYS(socket), 3, cmp);
}

// With egress: AF_UNIX, and TCP over IPv4 and IPv6 (SOCK_STREAM, whatever flags the type
// carries, protocol 0 or IPPROTO_TCP). Other families get EAFNOSUPPORT; other IP socket types
// (UDP, raw, …) and other stream protocols (SCTP, MPTCP: a socket of theirs would make the host
// load their module) EPERM. libseccomp takes the strictest action of all matching rules and a
// rule cannot hold two comparisons of one argument, so the refusals are written as disjoint
// cases rather than as "not one of these".
int add_tcp_socket_rules(scmp_filter_ctx ctx) {
  int rc = rule(ctx, SCMP_ACT_ALLOW, SCMP_SYS(socket), SCMP_CMP_EQ, AF_UNIX);
  static_assert(IPPROTO_IP == 0 && IPPROTO_TCP == 6);
  for (scmp_datum_t family : {AF_INET, AF_INET6}) {
    for (scmp_datum_t protocol : {IPPROTO_IP, IPPROTO_TCP})
      if (rc == 0)
        rc = socket_rule(ctx, SCMP_ACT_ALLOW, family, SOCK_STREAM, SCMP_CMP_EQ, protocol);
    for (scmp_datum_t protocol = 1; protocol < IPPROTO_TCP && rc == 0; ++protocol)
      rc = socket_rule(ctx, SCMP_ACT_ERRNO(EPERM), family, SOCK_STREAM, SCMP_CMP_EQ, protocol);
    if (rc == 0)
      rc = socket_rule(ctx, SCMP_ACT_ERRNO(EPERM), family, SOCK_STREAM, SCMP_CMP_GT, IPPROTO_TCP);
    for (scmp_datum_t type = 0; type <= 0xf && rc == 0; ++type)
      if (type != SOCK_STREAM) {
        scmp_arg_cmp cmp[] = {{0, SCMP_CMP_EQ, family, 0}, {1, SCMP_CMP_MASKED_EQ, 0xf, type}};
        rc = seccomp_rule_add_array(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(socket), 2, cmp);
      }
  }
  static_assert(AF_UNSPEC == 0 && AF_UNIX == 1 && AF_INET == 2 && AF_INET6 == 10);
  for (scmp_datum_t family : {0, 3, 4, 5, 6, 7, 8, 9})
    if (rc == 0)
      rc = rule(ctx, SCMP_ACT_ERRNO(EAFNOSUPPORT), SCMP_SYS(socket), SCMP_CMP_EQ, family);
  if (rc == 0)
    rc = rule(ctx, SCMP_ACT_ERRNO(EAFNOSUPPORT), SCMP_SYS(socket), SCMP_CMP_GT, AF_INET6);
  return rc;
}

// The calls allowed only with some arguments (x86-64: the first argument, a0).
int add_argument_rules(scmp_filter_ctx ctx, SeccompProgram::Sockets sockets) {
  int rc = 0;
  // Without egress, only AF_UNIX sockets: no TCP/UDP/raw/netlink/packet, so no network and no
  // DNS, even if the network namespace were ever shared. Other families get EAFNOSUPPORT, as
  // from a kernel built without them. socketpair is AF_UNIX only either way.
  for (int sc : {SCMP_SYS(socket), SCMP_SYS(socketpair)}) {
    if (sc == SCMP_SYS(socket) && sockets == SeccompProgram::Sockets::unix_and_tcp) {
      if ((rc = add_tcp_socket_rules(ctx)) != 0) return rc;
      continue;
    }
    if ((rc = rule(ctx, SCMP_ACT_ALLOW, sc, SCMP_CMP_EQ, AF_UNIX)) != 0) return rc;
    if ((rc = rule(ctx, SCMP_ACT_ERRNO(EAFNOSUPPORT), sc, SCMP_CMP_NE, AF_UNIX)) != 0) return rc;
  }
  // clone without namespace flags; with any of them EPERM, one rule per flag since a masked
  // comparison can only test for equality.
  unsigned long all = 0;
  for (unsigned long flag : kNamespaceFlags) {
    all |= flag;
    rc = rule(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(clone), SCMP_CMP_MASKED_EQ, flag, flag);
    if (rc != 0) return rc;
  }
  if ((rc = rule(ctx, SCMP_ACT_ALLOW, SCMP_SYS(clone), SCMP_CMP_MASKED_EQ, all, 0)) != 0) return rc;
  // personality: only the query (0xffffffff) and PER_LINUX (0), which changes nothing for a
  // program that already runs as PER_LINUX. Setting PER_LINUX32, ADDR_NO_RANDOMIZE,
  // READ_IMPLIES_EXEC… gets the default ENOSYS: a rule cannot hold two comparisons of one
  // argument, so "neither of the two" cannot be written as an EPERM rule. The kernel reads
  // the argument as an unsigned int, hence the comparison of the low 32 bits only.
  for (scmp_datum_t persona : {0xffffffffUL, 0UL}) {
    rc =
        rule(ctx, SCMP_ACT_ALLOW, SCMP_SYS(personality), SCMP_CMP_MASKED_EQ, 0xffffffffUL, persona);
    if (rc != 0) return rc;
  }
  return 0;
}

// The second filter of a sandbox whose programs may make TCP sockets: everything allowed
// (the first filter decides that) but setsockopt(SOL_TCP, TCP_ULP) — attaching an upper-layer
// protocol (kernel TLS) to a TCP socket, kernel attack surface a program has no use for
// (CVE-2023-0461 was reached this way). A filter of its own because "setsockopt unless
// SOL_TCP/TCP_ULP" cannot be written in one: the kernel reads both arguments as int, so only
// their low 32 bits may be compared (a masked comparison, equality only), and overlapping
// allow and refuse rules of one syscall are not for one filter to order. Stacked, the kernel
// takes the stricter answer of the two.
int add_tcp_ulp_refusal(scmp_filter_ctx ctx) {
  scmp_arg_cmp tcp_ulp[] = {{1, SCMP_CMP_MASKED_EQ, 0xffffffffUL, SOL_TCP},
                            {2, SCMP_CMP_MASKED_EQ, 0xffffffffUL, TCP_ULP}};
  return seccomp_rule_add_array(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(setsockopt), 2, tcp_ulp);
}

// libseccomp's compiled program; throws std::system_error.
std::vector<sock_filter> export_program(scmp_filter_ctx ctx, int rc) {
  // libseccomp 2.5 exports to a file descriptor only: a memfd holds the program briefly.
  UniqueFd out(::memfd_create("seccomp", MFD_CLOEXEC));
  if (rc == 0 && !out) rc = -errno;
  if (rc == 0) rc = seccomp_export_bpf(ctx, out.get());
  seccomp_release(ctx);
  if (rc != 0) throw std::system_error(-rc, std::generic_category(), "seccomp filter");
  std::vector<sock_filter> code;
  off_t size = ::lseek(out.get(), 0, SEEK_END);
  code.resize(static_cast<std::size_t>(size) / sizeof(sock_filter));
  if (::pread(out.get(), code.data(), static_cast<std::size_t>(size), 0) != size)
    throw std::system_error(errno, std::generic_category(), "read seccomp filter");
  return code;
}

int install_program(const std::vector<sock_filter>& code) {
  sock_fprog prog{static_cast<unsigned short>(code.size()), const_cast<sock_filter*>(code.data())};
  return ::prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) == 0 ? 0 : errno;
}

}  // namespace

SeccompProgram SeccompProgram::compile(Sockets sockets) {
  // Default ENOSYS (above); syscalls of other architectures (32-bit entry points, x32
  // numbers) kill the process, which is libseccomp's default bad-arch action.
  scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ERRNO(ENOSYS));
  if (ctx == nullptr) throw std::system_error(ENOMEM, std::generic_category(), "seccomp_init");
  // A binary tree of syscall numbers instead of a linear list: every system call the
  // program makes runs this filter, so its depth is per-syscall overhead.
  int rc = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_OPTIMIZE, 2);
  if (rc == 0) rc = add_lists(ctx);
  if (rc == 0) rc = add_argument_rules(ctx, sockets);
  SeccompProgram program;
  program.code_ = export_program(ctx, rc);
  if (sockets == Sockets::unix_and_tcp) {
    scmp_filter_ctx tcp = seccomp_init(SCMP_ACT_ALLOW);
    if (tcp == nullptr) throw std::system_error(ENOMEM, std::generic_category(), "seccomp_init");
    program.tcp_code_ = export_program(tcp, add_tcp_ulp_refusal(tcp));
  }
  return program;
}

int SeccompProgram::install() const {
  if (int e = install_program(code_)) return e;
  return tcp_code_.empty() ? 0 : install_program(tcp_code_);
}

}  // namespace sandgate::sandbox
