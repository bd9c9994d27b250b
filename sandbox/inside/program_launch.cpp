// The processes the supervisor starts inside the sandbox: a call's or an interpreter's init,
// the program that init starts, and a transfer; each confined the same way (confine()).
#include "program_launch.hpp"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include "close_descriptors.hpp"
#include "code_file.hpp"
#include "interpreter_sources.hpp"
#include "landlock.hpp"
#include "privileges.hpp"
#include "sandbox/fd_passing.hpp"
#include "transfer_process.hpp"

namespace sandgate::sandbox {
namespace {

using protocol::Header;
using protocol::Language;
using protocol::MessageType;

struct Runtime {
  const char* path;
  const char* extension;
};

Runtime runtime_for(Language language) {
  switch (language) {
    case Language::javascript:
      return {"/usr/bin/node", ".js"};
    case Language::bash:
      return {"/bin/bash", ".sh"};
    default:
      return {"/usr/bin/python3", ".py"};
  }
}

// Allocates nothing: a program's process calls it while it shares the init's memory.
void write_error(int fd, const char* what, int err) {
  // strerror may allocate (an unknown number) and consults the locale; this does neither.
  const char* reason = ::strerrordesc_np(err);
  if (reason == nullptr) reason = "unknown error";
  iovec parts[] = {{const_cast<char*>("sandgate: "), 10},
                   {const_cast<char*>(what), std::strlen(what)},
                   {const_cast<char*>(": "), 2},
                   {const_cast<char*>(reason), std::strlen(reason)},
                   {const_cast<char*>("\n"), 1}};
  ssize_t ignored = ::writev(fd, parts, std::size(parts));
  (void)ignored;
}

// What a program's process is given: its stdio and, for an interpreter, its channel to the
// gateway (placed at fds 3 and 4), or for a fresh Python program its figure channel (fd 3).
struct ProgramIo {
  int in = -1, out = -1, err = -1;
  int requests = -1, replies = -1;
  int figures = -1;
};

struct Launch {
  const char* path;  // absolute
  std::vector<std::string> args;
  bool figures = false;  // a fresh Python program with its figure channel at fd 3
};

Launch script_launch(Language language, const std::string& code_path) {
  Runtime rt = runtime_for(language);
  return {rt.path, {std::strrchr(rt.path, '/') + 1, code_path}};
}

Launch interpreter_launch(Language language) {
  if (language == Language::javascript) {
    Launch launch{"/usr/bin/node", {"node"}};
    std::istringstream flags{std::string(kJavascriptDriverFlags)};
    for (std::string flag; flags >> flag;) launch.args.push_back(flag);
    launch.args.push_back("-e");
    launch.args.emplace_back(kJavascriptDriver);
    return launch;
  }
  return {"/usr/bin/python3", {"python3", "-c", std::string(kPythonDriver)}};
}

// Moves the descriptors a program gets to their numbers (0-2, then 3-4 or 3) without one dup2
// overwriting another that is still to be placed. Returns how many it placed, or -1.
int place_descriptors(const ProgramIo& io) {
  int wanted[5] = {io.in, io.out, io.err, io.requests, io.replies};
  int count = io.requests >= 0 ? 5 : 3;
  if (io.figures >= 0 && count < 5) wanted[count++] = io.figures;
  int high[5];
  for (int i = 0; i < count; ++i)
    if ((high[i] = ::fcntl(wanted[i], F_DUPFD, 16)) < 0) return -1;
  for (int i = 0; i < count; ++i)
    if (::dup2(high[i], i) < 0) return -1;
  return count;
}

// How a process that fails to be confined says so before it ends (126): a program on its
// stderr, where the call's output shows it; a transfer on its status pipe, which the gateway reads.
enum class ConfinementFailure { stderr_line, transfer_status };

[[noreturn]] void fail_confinement(ConfinementFailure report, const char* step, int err) {
  if (report == ConfinementFailure::stderr_line)
    write_error(2, step, err);
  else
    write_status(2, protocol::StatusKind::spawn_failed, err);
  ::_exit(126);
}

// Every process the supervisor starts inside the sandbox (a call's program, an interpreter, a
// transfer) is confined here and nowhere else, in this order: its descriptors placed, the
// program's identity (no capabilities, no_new_privs), its process cap, Landlock, every other
// descriptor closed, /work as its directory, and seccomp last, since each step before it needs
// calls it refuses. The caller then execs or, a transfer, does its work. What differs between
// them: the descriptors they keep (`io`), whether they lead a session of their own, and where
// a failure is told.
void confine(const Settings& s, const ProgramIo& io, bool own_session, ConfinementFailure report) {
  // The Landlock ruleset may sit where the process's descriptors go (3, 4): move it first.
  int ruleset = s.landlock_ruleset >= 0 ? ::fcntl(s.landlock_ruleset, F_DUPFD_CLOEXEC, 16) : -1;
  const int placed = place_descriptors(io);
  if (placed < 0) ::_exit(126);
  if (own_session) ::setsid();
  if (int e =
          drop_privileges(s.rootfs.program_uid, s.rootfs.program_gid, s.last_cap, s.drop_groups))
    fail_confinement(report, "dropping privileges", e);
  if (s.max_processes > 0) {
    // Counted per host uid, which is the sandbox's own: a process cap even without cgroups.
    struct rlimit nproc {
      s.max_processes, s.max_processes
    };
    ::setrlimit(RLIMIT_NPROC, &nproc);
  }
  if (int e = apply_landlock(ruleset)) fail_confinement(report, "landlock", e);
  // Fail closed: whatever the supervisor holds (its control socket, another call's pipes)
  // is not the confined process's.
  if (int e = close_descriptors_from(placed))
    fail_confinement(report, "closing inherited descriptors", e);
  if (::chdir("/work") != 0) fail_confinement(report, "chdir /work", errno);
  // Seccomp is the last step (before exec, for a program): everything above needed calls it
  // refuses. A transfer gets the programs' own filter: it may do nothing they may not.
  if (int e = s.seccomp.install()) fail_confinement(report, "seccomp", e);
}

// A program's start, prepared by its init before the program's process exists: that process
// shares the init's memory until its exec (see start_program), so it may not allocate.
struct ProgramStart {
  const Settings* settings;
  const char* path;  // absolute
  char* const* argv;
  char* const* env;
  ProgramIo io;
};

// In the program's process: confined (a session of its own; failures on its stderr), then exec.
int exec_program(void* arg) {
  const auto& start = *static_cast<const ProgramStart*>(arg);
  confine(*start.settings, start.io, /*own_session=*/true, ConfinementFailure::stderr_line);
  ::execve(start.path, start.argv, start.env);
  write_error(2, start.path, errno);
  ::_exit(127);
}

// Starts the program's process the way posix_spawn does: it borrows the init's memory and its
// own stack until it execs, and the init waits until then. A fork would copy the init's page
// tables (the whole gateway binary's mappings) only for the exec to throw them away: on every
// fresh call, that copy and its teardown were most of what the sandbox added to the call.
pid_t start_program(const Settings& s, const Launch& launch, const ProgramIo& io) {
  std::vector<char*> argv;
  for (const auto& arg : launch.args) argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);
  ProgramStart start{&s, launch.path, argv.data(), s.environment->envp(launch.figures), io};
  // Confinement and exec need little stack; the dynamic linker's first resolutions the most.
  constexpr std::size_t kStackBytes = 64 * 1024;
  alignas(16) static char stack[kStackBytes];
  return ::clone(exec_program, stack + kStackBytes, CLONE_VM | CLONE_VFORK | SIGCHLD, &start);
}

// The init of a call or an interpreter: pid 1 of a pid namespace of its own. Reports the
// program's end on `status`, then stays until every process it left behind has ended.
[[noreturn]] void run_init(const Settings& s, const Launch& launch, const ProgramIo& io,
                           int status) {
  ::signal(SIGCHLD, SIG_DFL);
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  pid_t program = start_program(s, launch, io);
  // The program's uid change marked the memory it shared with this process dumpable as the
  // host's fs.suid_dumpable says (the isolation check refuses 1): this init stays out of reach.
  ::prctl(PR_SET_DUMPABLE, 0);
  if (program < 0) {
    write_status(status, protocol::StatusKind::spawn_failed, errno);
    ::_exit(1);
  }
  // Only the program holds the pipes, so they reach EOF when it (and its heirs) end.
  for (int fd : {io.in, io.out, io.err, io.requests, io.replies, io.figures})
    if (fd >= 0) ::close(fd);
  int wstatus = 0;
  while (::waitpid(program, &wstatus, 0) < 0 && errno == EINTR) {
  }
  write_status(status, protocol::StatusKind::exited, wstatus);
  ::close(status);
  while (::waitpid(-1, nullptr, 0) > 0 || errno == EINTR) {
  }
  ::_exit(0);
}

}  // namespace

void write_status(int fd, protocol::StatusKind kind, int value) {
  protocol::Status st{kind, value};
  ssize_t n;
  do n = ::write(fd, &st, sizeof st);
  while (n < 0 && errno == EINTR);
}

// A transfer process: the program's identity and confinement, but no exec: it moves the files
// itself (transfer_process.cpp), so a path a program planted is resolved with no more rights
// than that program has.
[[noreturn]] void run_transfer(const Settings& s, int request, int reply, int status) {
  ::signal(SIGCHLD, SIG_DFL);
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  // request -> 0, reply -> 1, status -> 2.
  confine(s, ProgramIo{request, reply, status}, /*own_session=*/false,
          ConfinementFailure::transfer_status);
  write_status(2, protocol::StatusKind::exited, serve_transfer(0, 1));
  ::_exit(0);
}

std::string code_path_for(const Header& h) {
  return std::string(kCodeDir) + "/cell-" + std::to_string(h.call_id) +
         runtime_for(h.language).extension;
}

// In a call's or an interpreter's init: starts what the gateway's message asked for (a run's
// code file is written already) and stays its init.
[[noreturn]] void run_order(const Settings& s, const Header& h, UniqueFd* fds, std::size_t count) {
  int status = fds[4].get();
  if (h.type == MessageType::start_interpreter) {
    UniqueFd null(::open("/dev/null", O_RDWR | O_CLOEXEC));
    if (!null) {
      write_status(status, protocol::StatusKind::spawn_failed, errno);
      ::_exit(1);
    }
    ProgramIo io{null.get(), fds[2].get(), fds[3].get(), fds[0].get(), fds[1].get()};
    run_init(s, interpreter_launch(h.language), io, status);
  }
  ProgramIo io{fds[1].get(), fds[2].get(), fds[3].get()};
  Launch launch = script_launch(h.language, code_path_for(h));
  if (count == protocol::kRunFdCountWithFigures) {
    io.figures = fds[5].get();
    launch.figures = true;
  }
  run_init(s, launch, io, status);
}

// A spare init: made between calls, it waits in its own pid namespace for the next call's
// order (the message and descriptors the supervisor got), so that the call does not wait for
// the supervisor's clone. Without an order (the supervisor closed the channel) it just ends.
[[noreturn]] void serve_as_spare(const Settings& s, int channel) {
  auto order = receive_message(channel, sizeof(Header), protocol::kRunFdCountWithFigures, false);
  if (order.closed || order.error != 0 || order.data.size() != sizeof(Header) ||
      order.fds.size() < protocol::kInterpreterFdCount)
    ::_exit(0);
  ::close(channel);
  Header h;
  std::memcpy(&h, order.data.data(), sizeof h);
  run_order(s, h, order.fds.data(), order.fds.size());
}

}  // namespace sandgate::sandbox
