#include "cgroup2_view.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <linux/mount.h>
#include <sched.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <sstream>

#include "sandbox/file_util.hpp"

namespace sandgate::sandbox {
namespace {

// The child's report: the step that failed (0: none) and its errno; the descriptor rides along.
struct Report {
  int step = 0;
  int error = 0;
};

enum Step : int { kUnshare = 1, kFsopen, kFsconfig, kFsmount, kSend };

const char* step_name(int step) {
  switch (step) {
    case kUnshare:
      return "creating a user namespace with its own mount and cgroup namespaces";
    case kFsopen:
      return "fsopen(cgroup2) in it";
    case kFsconfig:
      return "creating the cgroup2 superblock in it";
    case kFsmount:
      return "fsmount(cgroup2) in it";
    default:
      return "handing the mount back";
  }
}

// Raw system calls only: the gateway may be multi-threaded when it forks this child.
void send_report(int socket, Report report, int fd) {
  iovec data{&report, sizeof report};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  msghdr msg{};
  msg.msg_iov = &data;
  msg.msg_iovlen = 1;
  if (fd >= 0) {
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    std::memcpy(CMSG_DATA(c), &fd, sizeof fd);
  }
  ::sendmsg(socket, &msg, MSG_NOSIGNAL);
}

[[noreturn]] void make_view(int socket) {
  auto fail = [socket](int step) {
    send_report(socket, {step, errno}, -1);
    ::_exit(1);
  };
  // New namespaces are owned by the new user namespace, where this child holds every
  // capability: a cgroup namespace rooted at its cgroup (the gateway's), and a mount namespace
  // to mount in. No id map is needed: the gateway, not this child, uses the files.
  if (::unshare(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWCGROUP) != 0) fail(kUnshare);
  int context = static_cast<int>(::syscall(SYS_fsopen, "cgroup2", FSOPEN_CLOEXEC));
  if (context < 0) fail(kFsopen);
  if (::syscall(SYS_fsconfig, context, FSCONFIG_CMD_CREATE, nullptr, nullptr, 0) != 0)
    fail(kFsconfig);
  int mount = static_cast<int>(::syscall(SYS_fsmount, context, FSMOUNT_CLOEXEC,
                                         MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC));
  if (mount < 0) fail(kFsmount);
  send_report(socket, {0, 0}, mount);
  ::_exit(0);
}

bool is_cgroup2(int fd) {
  struct statfs st {};
  return ::fstatfs(fd, &st) == 0 && st.f_type == CGROUP2_SUPER_MAGIC;
}

// Whether `dir` (a cgroup2 directory) has the child `leaf` listing this process as a member.
bool holds_us_in(int dir, const char* leaf) {
  std::string procs = std::string(leaf) + "/cgroup.procs";
  int fd = ::openat(dir, procs.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  std::string text;
  char chunk[4096];
  for (ssize_t n; (n = ::read(fd, chunk, sizeof chunk)) > 0;) text.append(chunk, n);
  ::close(fd);
  std::istringstream in(text);
  for (pid_t p; in >> p;)
    if (p == ::getpid()) return true;
  return false;
}

}  // namespace

std::string descriptor_path(int fd) {
  return "/proc/self/fd/" + std::to_string(fd);
}

Cgroup2View cgroup2_view_from_own_namespaces() {
  Cgroup2View view;
  int pair[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) != 0) {
    view.problem = std::string("socketpair: ") + std::strerror(errno);
    return view;
  }
  UniqueFd ours(pair[0]), theirs(pair[1]);
  pid_t pid = ::fork();
  if (pid < 0) {
    view.problem = std::string("fork: ") + std::strerror(errno);
    return view;
  }
  if (pid == 0) make_view(theirs.get());
  theirs.reset();

  Report report{kSend, EPIPE};
  iovec data{&report, sizeof report};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  msghdr msg{};
  msg.msg_iov = &data;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  ssize_t n;
  do {
    n = ::recvmsg(ours.get(), &msg, MSG_CMSG_CLOEXEC);
  } while (n < 0 && errno == EINTR);
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); n > 0 && c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
      int fd = -1;
      std::memcpy(&fd, CMSG_DATA(c), sizeof fd);
      view.fd.reset(fd);
    }
  }
  while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
  }
  if (n != static_cast<ssize_t>(sizeof report)) report = {kSend, n < 0 ? errno : EPIPE};
  if (report.step != 0 || !view.fd) {
    view.fd.reset();
    view.problem =
        std::string(step_name(report.step)) + " was refused (" + std::strerror(report.error) + ")";
    return view;
  }
  if (!is_cgroup2(view.fd.get())) {
    view.fd.reset();
    view.problem = "the mount handed back is not cgroup2";
  }
  return view;
}

Cgroup2View borrow_gateway_cgroup2_view(const std::string& own_cgroup) {
  Cgroup2View view;
  std::string leaf = std::filesystem::path(own_cgroup).filename().string();
  DIR* proc = ::opendir("/proc");
  if (proc == nullptr) {
    view.problem = std::string("/proc: ") + std::strerror(errno);
    return view;
  }
  const std::string self = std::to_string(::getpid());
  std::string own_line = "0::" + own_cgroup + "\n";
  while (dirent* e = ::readdir(proc)) {
    if (e->d_name[0] < '1' || e->d_name[0] > '9' || self == e->d_name) continue;
    std::string pid_dir = std::string("/proc/") + e->d_name;
    auto cgroup = read_file(pid_dir + "/cgroup");
    if (!cgroup || cgroup->find(own_line) == std::string::npos) continue;
    DIR* fds = ::opendir((pid_dir + "/fd").c_str());
    if (fds == nullptr) continue;
    while (dirent* f = ::readdir(fds)) {
      if (f->d_name[0] < '0' || f->d_name[0] > '9') continue;
      UniqueFd candidate(
          ::open((pid_dir + "/fd/" + f->d_name).c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
      if (!candidate || !is_cgroup2(candidate.get())) continue;
      // O_PATH is enough for openat below; the gateway's view of its delegated cgroup has our
      // leaf as a child that lists this process.
      if (!holds_us_in(candidate.get(), leaf.c_str())) continue;
      view.fd = std::move(candidate);
      break;
    }
    ::closedir(fds);
    if (view.fd) break;
  }
  ::closedir(proc);
  if (!view.fd)
    view.problem = "no process in " + own_cgroup + " holds a writable view of its parent";
  return view;
}

}  // namespace sandgate::sandbox
