#include "spawn.hpp"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <system_error>
#include <vector>

#include "file_util.hpp"
#include "protocol.hpp"
#include "sandbox/inside/close_descriptors.hpp"

namespace sandgate::sandbox {
namespace {

constexpr unsigned long kNamespaces =
    CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWNS | CLONE_NEWIPC | CLONE_NEWUTS;

[[noreturn]] void throw_errno(const std::string& what) {
  throw std::system_error(errno, std::generic_category(), what);
}

// The clone child, before exec: raw system calls only (no allocation, no locks).
// `layer_path`: an environment's layer to open for the supervisor, or null.
[[noreturn]] void child_before_exec(int sync_fd, int control_fd, bool privileged,
                                    const char* layer_path, char** argv) {
  char go = 0;
  if (::read(sync_fd, &go, 1) != 1) ::_exit(120);
  // Opened while this process is still the gateway's host uid (before it becomes the sandbox's
  // root below), in the sandbox's new mount namespace, so that the supervisor may bind it. Kept
  // above the low descriptors the moves below write.
  int layer = -1;
  if (layer_path != nullptr) {
    int opened = ::open(layer_path, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (opened < 0) ::_exit(118);
    layer = ::fcntl(opened, F_DUPFD_CLOEXEC, 64);
    if (layer < 0) ::_exit(118);
  }
  // When memory runs out around the gateway (a pod's limit, a host's RAM), the kernel kills a
  // sandbox's processes first, never the gateway that serves every session. Inherited by all
  // of the sandbox's processes; lowering it again needs a privilege they do not have.
  int oom = ::open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
  if (oom < 0 || ::write(oom, "1000", 4) != 4) ::_exit(127);
  ::close(oom);
  if (privileged) {
    // Become the sandbox's root (mapped to an unprivileged host id) so that exec keeps the
    // capabilities the supervisor needs inside its namespaces; drop the host's groups.
    if (::syscall(SYS_setgroups, 0, nullptr) != 0) ::_exit(121);
    if (::syscall(SYS_setresgid, 0, 0, 0) != 0) ::_exit(122);
    if (::syscall(SYS_setresuid, 0, 0, 0) != 0) ::_exit(123);
  }
  // A uid change clears the parent-death signal, so it is set after it.
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (control_fd == protocol::kControlFd) {
    ::fcntl(control_fd, F_SETFD, 0);
  } else if (::dup2(control_fd, protocol::kControlFd) < 0) {
    ::_exit(124);
  }
  if (layer >= 0 && ::dup2(layer, protocol::kLayerFd) < 0) ::_exit(118);
  // The gateway's stdio (its log stream) is not the sandbox's business.
  int null = ::open("/dev/null", O_RDWR | O_CLOEXEC);
  if (null < 0 || ::dup2(null, 0) < 0 || ::dup2(null, 1) < 0 || ::dup2(null, 2) < 0) ::_exit(126);
  // Fail closed: a descriptor of the gateway (its listening socket, another client's
  // connection) left open here would be the program's to use.
  int first_closed = layer >= 0 ? protocol::kLayerFd + 1 : protocol::kControlFd + 1;
  if (close_descriptors_from(first_closed) != 0) ::_exit(119);
  char* const env[] = {nullptr};
  ::execve("/proc/self/exe", argv, env);
  ::_exit(125);
}

void write_id_maps(pid_t pid, const IdMapping& ids) {
  std::string proc = "/proc/" + std::to_string(pid);
  if (ids.privileged) {
    std::string map = "0 " + std::to_string(ids.host_root_id) + " 1\n" +
                      std::to_string(ids.program_id) + " " + std::to_string(ids.host_program_id) +
                      " 1\n";
    write_file(proc + "/uid_map", map);
    write_file(proc + "/gid_map", map);
  } else {
    write_file(proc + "/setgroups", "deny");
    write_file(proc + "/uid_map", "0 " + std::to_string(::geteuid()) + " 1\n");
    write_file(proc + "/gid_map", "0 " + std::to_string(::getegid()) + " 1\n");
  }
}

}  // namespace

SpawnedSupervisor spawn_supervisor(const SpawnRequest& request) {
  int pair[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) != 0) throw_errno("socketpair");
  UniqueFd ours(pair[0]), theirs(pair[1]);
  int sync[2];
  if (::pipe2(sync, O_CLOEXEC) != 0) throw_errno("pipe2");
  UniqueFd sync_read(sync[0]), sync_write(sync[1]);

  // Everything the child needs is allocated before clone.
  std::vector<std::string> args = {
      protocol::kSupervisorArgv0, std::to_string(request.work_bytes),
      std::to_string(request.tmp_bytes),
      std::to_string(request.ids.privileged ? request.ids.program_id : 0),
      std::to_string(request.ids.privileged ? request.ids.program_id : 0),
      std::to_string(request.max_processes), std::to_string(request.spare_init_idle.count()),
      std::to_string((request.egress ? protocol::kFeatureEgress : 0u) |
                     (request.tool_channel ? protocol::kFeatureToolChannel : 0u)),
      request.layer_dir.empty() ? "-" : (request.layer_writable ? "w" : "r"),
      // Never empty: an empty argument reads as "none" here too.
      request.egress && !request.egress_ca_pem.empty() ? request.egress_ca_pem : "-"};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);

  long pid = ::syscall(SYS_clone, kNamespaces | SIGCHLD, nullptr, nullptr, nullptr, 0);
  if (pid < 0) throw_errno("clone");
  if (pid == 0)
    child_before_exec(sync_read.get(), theirs.get(), request.ids.privileged,
                      request.layer_dir.empty() ? nullptr : request.layer_dir.c_str(), argv.data());

  SpawnedSupervisor out;
  out.pid = static_cast<pid_t>(pid);
  out.control = std::move(ours);
  out.reports_egress = request.egress;
  out.reports_tool_channel = request.tool_channel;
  theirs.reset();
  sync_read.reset();
  try {
    write_id_maps(out.pid, request.ids);
    // The child sets its score itself, but from inside its user namespace that does not raise
    // the floor (oom_score_adj_min) it may lower it to again; written from here, with
    // CAP_SYS_RESOURCE over the host (a root gateway on a host), it does. Best effort: in a pod
    // the sandboxes' memory cgroup keeps an OOM away from the gateway in any case.
    try {
      write_file("/proc/" + std::to_string(out.pid) + "/oom_score_adj", "1000");
    } catch (const std::system_error&) {
    }
    if (request.before_release) request.before_release(out.pid);
    char go = 1;
    if (::write(sync_write.get(), &go, 1) != 1) throw_errno("release supervisor");
  } catch (...) {
    ::kill(out.pid, SIGKILL);
    ::waitpid(out.pid, nullptr, 0);
    throw;
  }
  return out;
}

}  // namespace sandgate::sandbox
