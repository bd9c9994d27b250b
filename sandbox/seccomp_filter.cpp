#include "seccomp_filter.hpp"

#include <errno.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <seccomp.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <initializer_list>
#include <system_error>

#include "unique_fd.hpp"

namespace sandgate::sandbox {

namespace {

// Refused with EPERM: namespace and mount games, tracing other processes, kernel interfaces
// that widen the attack surface, and host-wide settings.
constexpr int kDenied[] = {
    SCMP_SYS(mount),
    SCMP_SYS(umount2),
    SCMP_SYS(pivot_root),
    SCMP_SYS(chroot),
    SCMP_SYS(move_mount),
    SCMP_SYS(open_tree),
    SCMP_SYS(fsopen),
    SCMP_SYS(fsconfig),
    SCMP_SYS(fsmount),
    SCMP_SYS(fspick),
    SCMP_SYS(mount_setattr),
    SCMP_SYS(unshare),
    SCMP_SYS(setns),
    SCMP_SYS(ptrace),
    SCMP_SYS(process_vm_readv),
    SCMP_SYS(process_vm_writev),
    SCMP_SYS(kexec_load),
    SCMP_SYS(kexec_file_load),
    SCMP_SYS(bpf),
    SCMP_SYS(perf_event_open),
    SCMP_SYS(keyctl),
    SCMP_SYS(add_key),
    SCMP_SYS(request_key),
    SCMP_SYS(userfaultfd),
    SCMP_SYS(init_module),
    SCMP_SYS(finit_module),
    SCMP_SYS(delete_module),
    SCMP_SYS(swapon),
    SCMP_SYS(swapoff),
    SCMP_SYS(reboot),
    SCMP_SYS(syslog),
    SCMP_SYS(acct),
    SCMP_SYS(quotactl),
    SCMP_SYS(open_by_handle_at),
    SCMP_SYS(name_to_handle_at),
    SCMP_SYS(lookup_dcookie),
    SCMP_SYS(vhangup),
    SCMP_SYS(settimeofday),
    SCMP_SYS(clock_settime),
    SCMP_SYS(clock_adjtime),
    SCMP_SYS(adjtimex),
    SCMP_SYS(fanotify_init),
    SCMP_SYS(iopl),
    SCMP_SYS(ioperm),
    SCMP_SYS(pidfd_getfd),
};

// io_uring bypasses seccomp for the operations it carries; ENOSYS makes libuv fall back.
constexpr int kUnavailable[] = {SCMP_SYS(io_uring_setup), SCMP_SYS(io_uring_enter),
                                SCMP_SYS(io_uring_register),
                                // clone3 passes flags in memory seccomp cannot read; libc
                                // falls back to clone, whose flags the rule below checks.
                                SCMP_SYS(clone3)};

int add_rules(scmp_filter_ctx ctx) {
  int rc = 0;
  for (int sc : kDenied) {
    if ((rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), sc, 0)) != 0) return rc;
  }
  for (int sc : kUnavailable) {
    if ((rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), sc, 0)) != 0) return rc;
  }
  // Only AF_UNIX sockets: no TCP/UDP/raw/netlink/packet, so no network and no DNS, even if the
  // network namespace were ever shared.
  for (int sc : {SCMP_SYS(socket), SCMP_SYS(socketpair)}) {
    // Spelled out rather than SCMP_A0(): the macro leaves datum_b to zero-fill, which clang's
    // -Wmissing-field-initializers rejects.
    scmp_arg_cmp not_unix{0, SCMP_CMP_NE, AF_UNIX, 0};
    rc = seccomp_rule_add_array(ctx, SCMP_ACT_ERRNO(EAFNOSUPPORT), sc, 1, &not_unix);
    if (rc != 0) return rc;
  }
  return 0;
}

// No new namespaces through clone either (x86-64: flags are the first argument). One rule per
// flag, since a masked comparison can only test for equality.
int add_clone_rules(scmp_filter_ctx ctx) {
  for (unsigned long flag : {CLONE_NEWUSER, CLONE_NEWNS, CLONE_NEWPID, CLONE_NEWNET, CLONE_NEWIPC,
                             CLONE_NEWUTS, CLONE_NEWCGROUP}) {
    int rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(clone), 1,
                              SCMP_A0(SCMP_CMP_MASKED_EQ, flag, flag));
    if (rc != 0) return rc;
  }
  return 0;
}

}  // namespace

SeccompProgram SeccompProgram::compile() {
  // Default allow; syscalls of other architectures (32-bit entry points) kill the process,
  // which is libseccomp's default bad-arch action.
  scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
  if (ctx == nullptr) throw std::system_error(ENOMEM, std::generic_category(), "seccomp_init");
  // A binary tree of syscall numbers instead of a linear list: every system call the
  // program makes runs this filter, so its depth is per-syscall overhead.
  int rc = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_OPTIMIZE, 2);
  if (rc == 0) rc = add_rules(ctx);
  if (rc == 0) rc = add_clone_rules(ctx);
  // libseccomp 2.5 exports to a file descriptor only: a memfd holds the program briefly.
  UniqueFd out(::memfd_create("seccomp", MFD_CLOEXEC));
  if (rc == 0 && !out) rc = -errno;
  if (rc == 0) rc = seccomp_export_bpf(ctx, out.get());
  seccomp_release(ctx);
  if (rc != 0) throw std::system_error(-rc, std::generic_category(), "seccomp filter");
  SeccompProgram program;
  off_t size = ::lseek(out.get(), 0, SEEK_END);
  program.code_.resize(static_cast<std::size_t>(size) / sizeof(sock_filter));
  if (::pread(out.get(), program.code_.data(), static_cast<std::size_t>(size), 0) != size)
    throw std::system_error(errno, std::generic_category(), "read seccomp filter");
  return program;
}

int SeccompProgram::install() const {
  sock_fprog prog{static_cast<unsigned short>(code_.size()),
                  const_cast<sock_filter*>(code_.data())};
  return ::prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) == 0 ? 0 : errno;
}

}  // namespace sandgate::sandbox
