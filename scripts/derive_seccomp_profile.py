#!/usr/bin/env python3
"""Writes the seccomp profiles of deploy/k8s/security-profiles/ (issue #46).

How the profile is derived: it is the runtimes' RuntimeDefault profile as a pod without
CAP_SYS_ADMIN gets it (moby's default.json, which containerd and CRI-O ship: the allow list
below, clone only without namespace flags, clone3 refused with ENOSYS so that libc falls back to
clone) plus exactly the system calls sandgate makes that RuntimeDefault gates on CAP_SYS_ADMIN,
each listed in SANDGATE_ADDS with its call site. Everything else sandgate (the gateway, the
sandbox supervisor and the programs it runs) calls is on the RuntimeDefault list already; the
programs run under the sandbox's own, stricter filter on top (sandbox/inside/seccomp_filter.cpp).
The base list is containers-common 0.50's allow list (Debian 12's podman) less what moby gates
on a capability a baseline pod lacks (CAP_SYS_ADMIN, CAP_SYSLOG, CAP_SYS_BOOT) or refuses
(keyctl), plus futex_waitv (Linux 5.16), which moby's profile allows since 2022 and the
sandbox's own filter lets programs use; `socket` has rules of its own below, as in containers-common: every socket but the
audit netlink one, which needs CAP_AUDIT_WRITE.

Writes:
  deploy/k8s/security-profiles/sandgate.json         for the kubelet's seccomp directory
  deploy/k8s/security-profiles/seccompprofile.yaml   the same as a Security Profiles Operator CR
  tests/vm/jobs/runtime-default-seccomp.json         RuntimeDefault alone (the VM's refusal case)

  scripts/derive_seccomp_profile.py [--check]   (--check: exit 1 if the files differ)
"""
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

RUNTIME_DEFAULT_ALLOW = [
    "_llseek", "_newselect", "accept", "accept4", "access", "adjtimex", "alarm", "bind", "brk",
    "capget", "capset", "chdir", "chmod", "chown", "chown32", "clock_adjtime", "clock_adjtime64",
    "clock_getres", "clock_getres_time64", "clock_gettime", "clock_gettime64", "clock_nanosleep",
    "clock_nanosleep_time64", "close", "close_range", "connect", "copy_file_range", "creat", "dup",
    "dup2", "dup3", "epoll_create", "epoll_create1", "epoll_ctl", "epoll_ctl_old", "epoll_pwait",
    "epoll_pwait2", "epoll_wait", "epoll_wait_old", "eventfd", "eventfd2", "execve", "execveat",
    "exit", "exit_group", "faccessat", "faccessat2", "fadvise64", "fadvise64_64", "fallocate",
    "fanotify_mark", "fchdir", "fchmod", "fchmodat", "fchown", "fchown32", "fchownat", "fcntl",
    "fcntl64", "fdatasync", "fgetxattr", "flistxattr", "flock", "fork", "fremovexattr", "fsetxattr",
    "fstat", "fstat64", "fstatat64", "fstatfs", "fstatfs64", "fsync", "ftruncate", "ftruncate64",
    "futex", "futex_time64", "futex_waitv", "futimesat", "get_mempolicy", "get_robust_list", "get_thread_area",
    "getcpu", "getcwd", "getdents", "getdents64", "getegid", "getegid32", "geteuid", "geteuid32",
    "getgid", "getgid32", "getgroups", "getgroups32", "getitimer", "getpeername", "getpgid",
    "getpgrp", "getpid", "getppid", "getpriority", "getrandom", "getresgid", "getresgid32",
    "getresuid", "getresuid32", "getrlimit", "getrusage", "getsid", "getsockname", "getsockopt",
    "gettid", "gettimeofday", "getuid", "getuid32", "getxattr", "inotify_add_watch", "inotify_init",
    "inotify_init1", "inotify_rm_watch", "io_cancel", "io_destroy", "io_getevents", "io_setup",
    "io_submit", "ioctl", "ioprio_get", "ioprio_set", "ipc", "kill", "landlock_add_rule",
    "landlock_create_ruleset", "landlock_restrict_self", "lchown", "lchown32", "lgetxattr", "link",
    "linkat", "listen", "listxattr", "llistxattr", "lremovexattr", "lseek", "lsetxattr", "lstat",
    "lstat64", "madvise", "mbind", "membarrier", "memfd_create", "memfd_secret", "mincore", "mkdir",
    "mkdirat", "mknod", "mknodat", "mlock", "mlock2", "mlockall", "mmap", "mmap2", "mprotect",
    "mq_getsetattr", "mq_notify", "mq_open", "mq_timedreceive", "mq_timedreceive_time64",
    "mq_timedsend", "mq_timedsend_time64", "mq_unlink", "mremap", "msgctl", "msgget", "msgrcv",
    "msgsnd", "msync", "munlock", "munlockall", "munmap", "nanosleep", "newfstatat", "open",
    "openat", "openat2", "pause", "pidfd_getfd", "pidfd_open", "pidfd_send_signal", "pipe", "pipe2",
    "pkey_alloc", "pkey_free", "pkey_mprotect", "poll", "ppoll", "ppoll_time64", "prctl", "pread64",
    "preadv", "preadv2", "prlimit64", "process_mrelease", "process_vm_readv", "process_vm_writev",
    "pselect6", "pselect6_time64", "ptrace", "pwrite64", "pwritev", "pwritev2", "read", "readahead",
    "readdir", "readlink", "readlinkat", "readv", "recv", "recvfrom", "recvmmsg", "recvmmsg_time64",
    "recvmsg", "remap_file_pages", "removexattr", "rename", "renameat", "renameat2",
    "restart_syscall", "rmdir", "rseq", "rt_sigaction", "rt_sigpending", "rt_sigprocmask",
    "rt_sigqueueinfo", "rt_sigreturn", "rt_sigsuspend", "rt_sigtimedwait", "rt_sigtimedwait_time64",
    "rt_tgsigqueueinfo", "sched_get_priority_max", "sched_get_priority_min", "sched_getaffinity",
    "sched_getattr", "sched_getparam", "sched_getscheduler", "sched_rr_get_interval",
    "sched_rr_get_interval_time64", "sched_setaffinity", "sched_setattr", "sched_setparam",
    "sched_setscheduler", "sched_yield", "seccomp", "select", "semctl", "semget", "semop",
    "semtimedop", "semtimedop_time64", "send", "sendfile", "sendfile64", "sendmmsg", "sendmsg",
    "sendto", "set_mempolicy", "set_robust_list", "set_thread_area", "set_tid_address", "setfsgid",
    "setfsgid32", "setfsuid", "setfsuid32", "setgid", "setgid32", "setgroups", "setgroups32",
    "setitimer", "setpgid", "setpriority", "setregid", "setregid32", "setresgid", "setresgid32",
    "setresuid", "setresuid32", "setreuid", "setreuid32", "setrlimit", "setsid", "setsockopt",
    "setuid", "setuid32", "setxattr", "shmat", "shmctl", "shmdt", "shmget", "shutdown", "sigaction",
    "sigaltstack", "signal", "signalfd", "signalfd4", "sigpending", "sigprocmask", "sigreturn",
    "sigsuspend", "socketcall", "socketpair", "splice", "stat", "stat64", "statfs", "statfs64",
    "statx", "symlink", "symlinkat", "sync", "sync_file_range", "syncfs", "syscall", "sysinfo",
    "tee", "tgkill", "time", "timer_create", "timer_delete", "timer_getoverrun", "timer_gettime",
    "timer_gettime64", "timer_settime", "timer_settime64", "timerfd", "timerfd_create",
    "timerfd_gettime", "timerfd_gettime64", "timerfd_settime", "timerfd_settime64", "times",
    "tkill", "truncate", "truncate64", "ugetrlimit", "umask", "uname", "unlink", "unlinkat",
    "utime", "utimensat", "utimensat_time64", "utimes", "vfork", "wait4", "waitid", "waitpid",
    "write", "writev"
]

# Namespace flags RuntimeDefault refuses on clone without CAP_SYS_ADMIN: CLONE_NEWNS,
# CLONE_NEWCGROUP, CLONE_NEWUTS, CLONE_NEWIPC, CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET.
CLONE_NAMESPACE_FLAGS = 0x7E020000

# What sandgate adds, and where it calls it.
SANDGATE_ADDS = {
    "clone": "sandbox/spawn.cpp: the supervisor's clone into new user, pid, network, mount, IPC "
             "and UTS namespaces; sandbox/inside/supervisor.cpp: each call's init in a new pid "
             "namespace",
    "unshare": "sandbox/inside/supervisor.cpp: the sandbox's cgroup namespace; "
               "sandbox/cgroups/cgroup2_view.cpp and sandbox/namespace_probe.cpp: a user namespace "
               "of the gateway's own",
    "mount": "sandbox/inside/rootfs.cpp: the sandbox's root (tmpfs, read-only binds, its /proc) "
             "in its own mount namespace",
    "umount2": "sandbox/inside/rootfs.cpp: detaching the old root after pivot_root",
    "pivot_root": "sandbox/inside/rootfs.cpp: entering the sandbox's root",
    "sethostname": "sandbox/inside/supervisor.cpp: the sandbox's host name, in its UTS namespace",
    "fsopen": "sandbox/cgroups/cgroup2_view.cpp: a cgroup2 superblock context for the gateway's "
              "view of its cgroup",
    "fsconfig": "sandbox/cgroups/cgroup2_view.cpp: creating that superblock",
    "fsmount": "sandbox/cgroups/cgroup2_view.cpp: the detached cgroup2 mount handed to the gateway",
}

ARCHITECTURES = ["SCMP_ARCH_X86_64", "SCMP_ARCH_X86", "SCMP_ARCH_X32", "SCMP_ARCH_AARCH64",
                 "SCMP_ARCH_ARM"]


def personality_rules():
    # RuntimeDefault's: the personalities a program may ask for (PER_LINUX, PER_LINUX32,
    # UNAME26, UNAME26|PER_LINUX32, and the query 0xffffffff).
    return [{"names": ["personality"], "action": "SCMP_ACT_ALLOW",
             "args": [{"index": 0, "value": v, "op": "SCMP_CMP_EQ"}]}
            for v in (0, 8, 131072, 131080, 4294967295)]


def profile(with_sandgate):
    allow = sorted(set(RUNTIME_DEFAULT_ALLOW) | (set(SANDGATE_ADDS) if with_sandgate else set()))
    rules = [{"names": allow, "action": "SCMP_ACT_ALLOW"}]
    # socket: any but the audit netlink socket (AF_NETLINK 16, NETLINK_AUDIT 9), which needs
    # CAP_AUDIT_WRITE; conditions only (an unconditional allow would override the refusal).
    rules.append({"names": ["socket"], "action": "SCMP_ACT_ERRNO", "errnoRet": 22,
                  "args": [{"index": 0, "value": 16, "valueTwo": 0, "op": "SCMP_CMP_EQ"},
                           {"index": 2, "value": 9, "valueTwo": 0, "op": "SCMP_CMP_EQ"}]})
    for index, value in ((0, 16), (2, 9)):
        rules.append({"names": ["socket"], "action": "SCMP_ACT_ALLOW",
                      "args": [{"index": index, "value": value, "valueTwo": 0, "op": "SCMP_CMP_NE"}]})
    if not with_sandgate:
        rules.append({"names": ["clone"], "action": "SCMP_ACT_ALLOW",
                      "args": [{"index": 0, "value": CLONE_NAMESPACE_FLAGS, "valueTwo": 0,
                                "op": "SCMP_CMP_MASKED_EQ"}]})
    # clone3's flags sit in memory a filter cannot read: ENOSYS makes libc use clone.
    rules.append({"names": ["clone3"], "action": "SCMP_ACT_ERRNO", "errnoRet": 38})
    rules.append({"names": ["arch_prctl", "modify_ldt"], "action": "SCMP_ACT_ALLOW"})
    rules += personality_rules()
    return {"defaultAction": "SCMP_ACT_ERRNO",
            "architectures": ARCHITECTURES, "syscalls": rules}


def spo_yaml(p):
    # JSON is YAML: the CR's spec is the profile itself, field for field.
    lines = ["# The seccomp profile of sandgate.json as a Security Profiles Operator resource",
             "# (security-profiles-operator.x-k8s.io/v1beta1). The operator writes it to each",
             "# node as operator/<namespace>/sandgate.json under the kubelet's seccomp directory:",
             "# there the StatefulSet names it with localhostProfile: operator/sandgate/sandgate.json.",
             "# Generated by scripts/derive_seccomp_profile.py; edit that, not this.",
             "apiVersion: security-profiles-operator.x-k8s.io/v1beta1",
             "kind: SeccompProfile",
             "metadata:",
             "  name: sandgate",
             "  namespace: sandgate",
             "spec:"]
    for key, value in p.items():
        lines.append(f"  {key}: {json.dumps(value)}")
    return "\n".join(lines) + "\n"


def main():
    out = {
        ROOT / "deploy/k8s/security-profiles/sandgate.json": json.dumps(profile(True), indent=1) + "\n",
        ROOT / "deploy/k8s/security-profiles/seccompprofile.yaml": spo_yaml(profile(True)),
        ROOT / "tests/vm/jobs/runtime-default-seccomp.json": json.dumps(profile(False), indent=1) + "\n",
    }
    if "--check" in sys.argv:
        stale = [str(p.relative_to(ROOT)) for p, text in out.items()
                 if not p.exists() or p.read_text() != text]
        if stale:
            print("stale, run scripts/derive_seccomp_profile.py:", ", ".join(stale))
            return 1
        return 0
    for p, text in out.items():
        p.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
