#include "namespace_probe.hpp"

#include <fcntl.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace sandgate::sandbox {
namespace {

constexpr unsigned long kNamespaces =
    CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWNS | CLONE_NEWIPC | CLONE_NEWUTS;

struct Result {
  int step = 0;
  int error = 0;
};

[[noreturn]] void report(int fd, NamespaceStep step, int error) {
  Result r{static_cast<int>(step), error};
  (void)::write(fd, &r, sizeof r);
  ::_exit(0);
}

// Raw system calls only: the gateway may be multi-threaded when it forks the probe.
[[noreturn]] void probe_in_child(int fd) {
  if (::unshare(kNamespaces) != 0) report(fd, NamespaceStep::create_namespaces, errno);
  // A mount of our own, where the sandbox's root is built (a throwaway tmpfs over /tmp, or over
  // / where there is no /tmp: this mount namespace dies with the probe).
  const char* point = ::access("/tmp", F_OK) == 0 ? "/tmp" : "/";
  if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0 ||
      ::mount("tmpfs", point, "tmpfs", MS_NOSUID | MS_NODEV, "size=4k") != 0)
    report(fd, NamespaceStep::mount, errno);
  // /proc of the new pid namespace needs a process in it: the sandbox's supervisor is one.
  long pid = ::syscall(SYS_clone, SIGCHLD, nullptr, nullptr, nullptr, 0);
  if (pid < 0) report(fd, NamespaceStep::probe, errno);
  if (pid == 0) {
    if (::mount("proc", point, "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, "hidepid=invisible") != 0)
      report(fd, NamespaceStep::mount_proc, errno);
    report(fd, NamespaceStep::none, 0);
  }
  int status = 0;
  while (::waitpid(static_cast<pid_t>(pid), &status, 0) < 0 && errno == EINTR) {
  }
  ::_exit(0);
}

std::string errno_name(int e) {
  const char* name = ::strerrorname_np(e);
  return (name ? std::string(name) : "errno " + std::to_string(e)) + ": " + std::strerror(e);
}

}  // namespace

NamespaceProbe probe_sandbox_namespaces() {
  NamespaceProbe out;
  int pipe[2];
  if (::pipe2(pipe, O_CLOEXEC) != 0) return {NamespaceStep::probe, errno};
  pid_t pid = ::fork();
  if (pid < 0) {
    int e = errno;
    ::close(pipe[0]);
    ::close(pipe[1]);
    return {NamespaceStep::probe, e};
  }
  if (pid == 0) {
    ::close(pipe[0]);
    probe_in_child(pipe[1]);
  }
  ::close(pipe[1]);
  Result r{static_cast<int>(NamespaceStep::probe), EPIPE};
  ssize_t n;
  do {
    n = ::read(pipe[0], &r, sizeof r);
  } while (n < 0 && errno == EINTR);
  ::close(pipe[0]);
  while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
  }
  if (n != static_cast<ssize_t>(sizeof r)) r = {static_cast<int>(NamespaceStep::probe), EPIPE};
  out.refused = static_cast<NamespaceStep>(r.step);
  out.error = r.error;
  return out;
}

std::string namespace_problem(const NamespaceProbe& probe) {
  const std::string why = " (" + errno_name(probe.error) + ")";
  switch (probe.refused) {
    case NamespaceStep::none:
      return "";
    case NamespaceStep::create_namespaces:
      if (probe.error == EPERM)
        return "creating a user namespace (with pid, network, mount, IPC and UTS namespaces) was "
               "refused" +
               why +
               ": the container's seccomp profile refuses it (the runtimes' RuntimeDefault does "
               "without CAP_SYS_ADMIN); use the shipped profile: seccompProfile {type: Localhost, "
               "localhostProfile: sandgate.json} (deploy/k8s/security-profiles/sandgate.json), or "
               "podman "
               "--security-opt seccomp=deploy/k8s/security-profiles/sandgate.json";
      if (probe.error == ENOSPC)
        return "creating a user namespace was refused" + why +
               ": the node's user.max_user_namespaces (or the nesting depth) is exhausted; raise "
               "the sysctl on the node";
      if (probe.error == EACCES)
        return "creating a user namespace was refused" + why +
               ": an LSM refuses it (AppArmor's userns restriction on Ubuntu 23.10+); use the "
               "shipped AppArmor profile: appArmorProfile {type: Localhost, localhostProfile: "
               "sandgate} (deploy/k8s/security-profiles/sandgate.apparmor), with its userns rule "
               "on AppArmor 4";
      return "creating a user namespace was refused" + why +
             ": the kernel must allow unprivileged user namespaces (Linux 4.6+ with "
             "CONFIG_USER_NS; kernel.unprivileged_userns_clone=1 where that sysctl exists)";
    case NamespaceStep::mount:
      if (probe.error == EACCES)
        return "mounting in the sandbox's own mount namespace was refused" + why +
               ": the container's AppArmor profile denies mount (containerd's and podman's "
               "default profiles do); use the shipped profile: appArmorProfile {type: "
               "Localhost, localhostProfile: sandgate} "
               "(deploy/k8s/security-profiles/sandgate.apparmor)";
      return "mounting in the sandbox's own mount namespace was refused" + why +
             ": the container's seccomp profile refuses mount; use deploy/k8s/seccomp/"
             "sandgate.json (Localhost)";
    case NamespaceStep::mount_proc:
      if (probe.error == EPERM)
        return "mounting /proc for the sandbox's pid namespace was refused" + why +
               ": the container's /proc is masked (the kernel refuses a fresh proc mount "
               "where parts of /proc are hidden); set procMount: Unmasked in the container's "
               "securityContext (Pod Security baseline allows it with hostUsers: false, policy "
               "version 1.35+), or podman --security-opt unmask=/proc/*";
      return "mounting /proc for the sandbox's pid namespace was refused" + why +
             ": the container's AppArmor profile must allow mounting proc "
             "(deploy/k8s/security-profiles/sandgate.apparmor)";
    case NamespaceStep::probe:
      return "the sandbox namespace probe itself failed" + why;
  }
  return "";
}

}  // namespace sandgate::sandbox
