#include "supervisor.hpp"

#include <fcntl.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>
#include <set>
#include <span>
#include <sstream>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "close_descriptors.hpp"
#include "code_file.hpp"
#include "interpreter_sources.hpp"
#include "landlock.hpp"
#include "namespace_processes.hpp"
#include "privileges.hpp"
#include "program_launch.hpp"
#include "rootfs.hpp"
#include "sandbox/fd_passing.hpp"
#include "sandbox/protocol.hpp"
#include "seccomp_filter.hpp"
#include "transfer_process.hpp"

namespace sandgate::sandbox {
namespace {

using protocol::Header;
using protocol::Language;
using protocol::MessageType;

// `fds` go with the message (the listening sockets with `ready`).
void send_text(MessageType type, const std::string& text, std::span<const int> fds = {}) {
  std::string msg(sizeof(Header), '\0');
  Header h{type, 0, Language::python, 0};
  std::memcpy(msg.data(), &h, sizeof h);
  msg += text;
  send_message(protocol::kControlFd, msg.data(), msg.size(), fds);
}

void bring_loopback_up() {
  int s = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (s < 0) return;
  ifreq ifr{};
  std::strncpy(ifr.ifr_name, "lo", IFNAMSIZ - 1);
  if (::ioctl(s, SIOCGIFFLAGS, &ifr) == 0) {
    ifr.ifr_flags |= IFF_UP;
    ::ioctl(s, SIOCSIFFLAGS, &ifr);
  }
  ::close(s);
}

// The egress proxy's socket on the sandbox's loopback (its network namespace's only interface),
// taken before any program runs, so none can bind the port first. Without SO_REUSEPORT on it a
// program cannot bind the port beside it either.
UniqueFd listen_for_egress() {
  UniqueFd s(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!s) throw std::system_error(errno, std::generic_category(), "egress proxy socket");
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(protocol::kEgressProxyPort);
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::bind(s.get(), reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0)
    throw std::system_error(errno, std::generic_category(), "egress proxy bind");
  if (::listen(s.get(), 64) != 0)
    throw std::system_error(errno, std::generic_category(), "egress proxy listen");
  return s;
}

class Supervisor {
 public:
  explicit Supervisor(Settings s) : settings_(std::move(s)) {}

  [[noreturn]] void serve() {
    sigset_t mask;
    sigemptyset(&mask);
    sigaddset(&mask, SIGCHLD);
    ::sigprocmask(SIG_BLOCK, &mask, nullptr);
    int sigfd = ::signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
    for (;;) {
      pollfd fds[2] = {{protocol::kControlFd, POLLIN, 0}, {sigfd, POLLIN, 0}};
      if (::poll(fds, 2, spare_wait_ms()) < 0) {
        if (errno == EINTR) continue;
        ::_exit(2);
      }
      drop_idle_spare();  // checked on every wake-up: a busy sandbox's spare still has its time
      if (fds[1].revents & POLLIN) reap(sigfd);
      if (fds[0].revents & (POLLIN | POLLHUP | POLLERR)) handle_message();
    }
  }

 private:
  void reap(int sigfd) {
    signalfd_siginfo info;
    while (::read(sigfd, &info, sizeof info) > 0) {
    }
    pid_t pid;
    bool init_ended = false;
    while ((pid = ::waitpid(-1, nullptr, WNOHANG)) > 0) {
      if (pid == spare_.pid) spare_ = {};  // killed while it waited (an OOM kill)
      for (auto it = calls_.begin(); it != calls_.end(); ++it) {
        if (it->second.pid != pid) continue;
        // A call init exits only after every process of its pid namespace is gone, so this
        // is the moment a killed call's processes no longer count against the limits.
        if (killed_.erase(it->first)) send_reaped(it->first);
        init_ended = init_ended || it->second.init;
        calls_.erase(it);
        break;
      }
    }
    // Between calls: the next one finds its init ready.
    if (init_ended) prepare_spare();
  }

  static void send_reaped(std::uint32_t call_id) {
    Header h{MessageType::reaped, call_id, Language::python, 0};
    send_message(protocol::kControlFd, &h, sizeof h);
  }

  void handle_message() {
    auto msg = receive_message(protocol::kControlFd, sizeof(protocol::InterruptRequest),
                               protocol::kRunFdCountWithFigures, true);
    if (msg.error == EAGAIN) return;
    // The gateway has gone (or spoke nonsense): the sandbox ends with its supervisor.
    if (msg.closed || msg.error != 0 || msg.data.size() < sizeof(Header)) ::_exit(0);
    Header h;
    std::memcpy(&h, msg.data.data(), sizeof h);
    if (h.type == MessageType::interrupt && msg.data.size() == sizeof(protocol::InterruptRequest)) {
      protocol::InterruptRequest request;
      std::memcpy(&request, msg.data.data(), sizeof request);
      auto it = calls_.find(h.call_id);
      if (it != calls_.end()) interrupt_interpreter(it->second.pid, request.call_started_ns);
      Header done{MessageType::interrupted, h.call_id, Language::python, 0};
      send_message(protocol::kControlFd, &done, sizeof done);
      return;
    }
    if (msg.data.size() != sizeof(Header)) ::_exit(0);
    if (h.type == MessageType::kill) {
      auto it = calls_.find(h.call_id);
      if (it == calls_.end()) {
        send_reaped(h.call_id);  // already gone
      } else {
        killed_.insert(h.call_id);
        ::kill(it->second.pid, SIGKILL);
      }
    } else if (h.type == MessageType::run && (msg.fds.size() == protocol::kRunFdCount ||
                                              (msg.fds.size() == protocol::kRunFdCountWithFigures &&
                                               h.language == Language::python))) {
      start_call(h, msg.fds);
    } else if (h.type == MessageType::start_interpreter &&
               msg.fds.size() == protocol::kInterpreterFdCount) {
      start_init(h, msg.fds);
    } else if (h.type == MessageType::transfer && msg.fds.size() == protocol::kTransferFdCount) {
      start_transfer(h, msg.fds.data());
    }
  }

  void start_call(const Header& h, std::vector<UniqueFd>& fds) {
    if (!previous_code_.empty()) ::unlink(previous_code_.c_str());
    std::string code_path = code_path_for(h);
    if (int e = write_code_file(fds[0].get(), code_path)) {
      write_status(fds[4].get(), protocol::StatusKind::spawn_failed, e);
      return;
    }
    previous_code_ = code_path;
    start_init(h, fds);
  }

  // A plain fork (this process is single-threaded): a transfer starts no programs, so it needs
  // no pid namespace of its own; `kill` and `reaped` work for it as for a call.
  void start_transfer(const Header& h, UniqueFd* fds) {
    pid_t pid = ::fork();
    if (pid < 0) {
      write_status(fds[2].get(), protocol::StatusKind::spawn_failed, errno);
      return;
    }
    if (pid == 0) {
      ::close(protocol::kControlFd);
      run_transfer(settings_, fds[0].get(), fds[1].get(), fds[2].get());
    }
    calls_[h.call_id] = {pid, /*init=*/false};
  }

  // The order goes to the spare init if there is one, else to an init cloned for it.
  void start_init(const Header& h, std::vector<UniqueFd>& fds) {
    if (spare_.pid > 0) {
      int sent[protocol::kRunFdCountWithFigures];
      for (std::size_t i = 0; i < fds.size(); ++i) sent[i] = fds[i].get();
      if (send_message(spare_.channel.get(), &h, sizeof h,
                       std::span<const int>(sent, fds.size())) == 0) {
        calls_[h.call_id] = {std::exchange(spare_, {}).pid, /*init=*/true};
        return;
      }
      ::kill(spare_.pid, SIGKILL);  // reaped as any child; the order goes to a new init
      spare_ = {};
    }
    pid_t pid = clone_init();
    if (pid < 0) {
      write_status(fds[4].get(), protocol::StatusKind::spawn_failed, errno);
      return;
    }
    if (pid == 0) run_order(settings_, h, fds.data(), fds.size());
    calls_[h.call_id] = {pid, /*init=*/true};
  }

  // Until the spare has waited its time (-1: no spare, no limit).
  int spare_wait_ms() const {
    if (spare_.pid <= 0) return -1;
    auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(
                      std::chrono::steady_clock::now() - spare_.made)
                      .count();
    return static_cast<int>(std::max<long long>(0, settings_.spare_idle_ms - waited));
  }

  // No call came: the spare goes (reaped like any child), and none is made until a call's
  // init has gone again.
  void drop_idle_spare() {
    if (spare_.pid <= 0 || spare_wait_ms() > 0) return;
    ::kill(spare_.pid, SIGKILL);
    spare_ = {};
  }

  void prepare_spare() {
    if (spare_.pid > 0 || settings_.spare_idle_ms <= 0) return;  // 0: no spare at all
    int pair[2];
    if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) != 0) return;
    UniqueFd ours(pair[0]), theirs(pair[1]);
    pid_t pid = clone_init();
    if (pid < 0) return;  // the next call clones its own (and is told if that fails too)
    if (pid == 0) {
      ours.reset();
      serve_as_spare(settings_, theirs.get());
    }
    spare_ = {pid, std::move(ours), std::chrono::steady_clock::now()};
  }

  // Fork-like clone into a new pid namespace (this process is single-threaded, so the child
  // may run ordinary code); in the child, 0 and no control socket.
  static pid_t clone_init() {
    long pid = ::syscall(SYS_clone, CLONE_NEWPID | SIGCHLD, nullptr, nullptr, nullptr, 0);
    if (pid == 0) ::close(protocol::kControlFd);
    return static_cast<pid_t>(pid);
  }

  struct Child {
    pid_t pid = -1;
    bool init = true;  // a call's or interpreter's init, not a transfer
  };
  struct Spare {
    pid_t pid = -1;
    UniqueFd channel;  // the order goes here
    std::chrono::steady_clock::time_point made;
  };

  Settings settings_;
  std::map<std::uint32_t, Child> calls_;
  Spare spare_;
  std::set<std::uint32_t> killed_;
  std::string previous_code_;
};

// The host's CA bundle (Debian's path), read before the sandbox's root replaces the host's; empty
// when there is none.
std::string read_system_ca_bundle() {
  int fd = ::open("/etc/ssl/certs/ca-certificates.crt", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return "";
  std::string text;
  char chunk[65536];
  for (;;) {
    ssize_t n = ::read(fd, chunk, sizeof chunk);
    if (n <= 0 || text.size() > (16u << 20)) break;
    text.append(chunk, static_cast<std::size_t>(n));
  }
  ::close(fd);
  return text;
}

std::uint64_t arg_number(char** argv, int index) {
  return std::strtoull(argv[index], nullptr, 10);
}

}  // namespace

bool is_supervisor_invocation(int argc, char** argv) {
  return argc == 10 && std::strcmp(argv[0], protocol::kSupervisorArgv0) == 0;
}

namespace {

// What the gateway's spawn asked for (its argv: see is_supervisor_invocation and
// SpawnedSupervisor), and the files the new root gets for it.
Settings settings_from(char** argv) {
  Settings s;
  s.rootfs.work_bytes = arg_number(argv, 1);
  s.rootfs.tmp_bytes = arg_number(argv, 2);
  s.rootfs.program_uid = static_cast<uid_t>(arg_number(argv, 3));
  s.rootfs.program_gid = static_cast<gid_t>(arg_number(argv, 4));
  const std::string support = kPythonSupportDir;
  s.rootfs.files = {{support + "/sitecustomize.py", std::string(kPythonSitecustomize)},
                    {support + "/sandgate_figures.py", std::string(kPythonFigures)},
                    {support + "/sandgate_matplotlib.py", std::string(kPythonBackend)}};
  s.max_processes = static_cast<std::uint32_t>(arg_number(argv, 5));
  s.spare_idle_ms = static_cast<int>(std::min<std::uint64_t>(arg_number(argv, 6), 1u << 30));
  const auto features = arg_number(argv, 7);
  s.egress = (features & protocol::kFeatureEgress) != 0;
  s.rootfs.tool_channel = (features & protocol::kFeatureToolChannel) != 0;
  if (s.rootfs.tool_channel) {
    // The programs that call the tenant's upstream tools through the channel (issue #45).
    s.rootfs.files.push_back({support + "/sandgate_tools.py", std::string(kToolsPython)});
    s.rootfs.files.push_back(
        {std::string(kToolsNodeDir) + "/sandgate_tools.js", std::string(kToolsJavascript)});
    s.rootfs.files.push_back(
        {std::string(kToolsBinDir) + "/sandgate-tool", std::string(kToolsCommand), 0755});
  }
  // With egress, the trust its programs' TLS clients are pointed at (program_launch.cpp): the
  // system's store, and the gateway CA's certificate when the gateway terminates TLS for hosts
  // carrying a secret (issue #44). Read before the root is built, from the host's /etc/ssl.
  std::string ca_bundle;
  const bool gateway_ca = s.egress && std::strcmp(argv[9], "-") != 0;
  if (s.egress) {
    ca_bundle = read_system_ca_bundle();
    if (std::strcmp(argv[9], "-") != 0) {
      if (!ca_bundle.empty() && ca_bundle.back() != '\n') ca_bundle += '\n';
      ca_bundle += argv[9];
    }
    s.rootfs.files.push_back({kEgressCaBundle, ca_bundle});
  }
  // "-": no environment's layer; "r": one, read-only; "w": its build (protocol::kLayerFd).
  if (argv[8][0] == 'r' || argv[8][0] == 'w') {
    s.rootfs.layer_fd = protocol::kLayerFd;
    s.rootfs.layer_writable = argv[8][0] == 'w';
  }
  s.environment = std::make_shared<const ProgramEnvironment>(
      s.egress, s.rootfs.layer_fd >= 0, s.rootfs.layer_writable, gateway_ca, s.rootfs.tool_channel);
  s.last_cap = last_capability();
  s.drop_groups = setgroups_allowed();
  return s;
}

}  // namespace

void supervisor_main(int /*argc*/, char** argv) {
  // If the gateway dies, so does the sandbox: killing pid 1 ends its whole pid namespace.
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  // Not dumpable (inherited by the calls' inits, reset for programs by their exec): a program
  // may not ptrace, read the memory or /proc entries of, or even see (hidepid) the processes
  // that hold every capability of the sandbox, even where it shares their uid (an
  // unprivileged gateway maps only one).
  ::prctl(PR_SET_DUMPABLE, 0);
  Settings s = settings_from(argv);
  UniqueFd egress_listener, tool_listener;
  try {
    // The gateway has placed us in our cgroups; a cgroup namespace hides the host's tree.
    if (::unshare(CLONE_NEWCGROUP) != 0)
      throw std::system_error(errno, std::generic_category(), "unshare cgroup namespace");
    tool_listener = build_rootfs(s.rootfs);
    if (::sethostname("sandbox", 7) != 0)
      throw std::system_error(errno, std::generic_category(), "sethostname");
    bring_loopback_up();
    if (s.egress) egress_listener = listen_for_egress();
    s.landlock_ruleset = build_landlock_ruleset(s.rootfs.layer_writable).release();
    s.seccomp = SeccompProgram::compile(s.egress ? SeccompProgram::Sockets::unix_and_tcp
                                                 : SeccompProgram::Sockets::unix_only);
  } catch (const std::exception& e) {
    send_text(MessageType::failed, e.what());
    ::_exit(1);
  }
  // The listening sockets go with the report, the egress proxy's first (SpawnedSupervisor).
  std::vector<int> handed;
  if (egress_listener) handed.push_back(egress_listener.get());
  if (tool_listener) handed.push_back(tool_listener.get());
  send_text(MessageType::ready, "", handed);
  egress_listener.reset();  // the gateway's now: no program can inherit or accept on them
  tool_listener.reset();
  Supervisor(std::move(s)).serve();
}

}  // namespace sandgate::sandbox
