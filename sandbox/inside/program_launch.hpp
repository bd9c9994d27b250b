#pragma once
// The processes the supervisor starts inside the sandbox (program_launch.cpp): a call's or an
// interpreter's init (pid 1 of a pid namespace of its own) and the program it starts, and a
// transfer; each confined the same way before it execs or does its work.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "common/unique_fd.hpp"
#include "program_environment.hpp"
#include "rootfs.hpp"
#include "sandbox/protocol.hpp"
#include "seccomp_filter.hpp"

namespace sandgate::sandbox {

// What the supervisor was told at its start, and built once for every process it starts.
struct Settings {
  RootfsPlan rootfs;
  std::uint32_t max_processes = 0;  // RLIMIT_NPROC; 0 leaves it alone
  int last_cap = 0;
  bool drop_groups = true;     // false where the gid map was written with setgroups denied
  int spare_idle_ms = 60'000;  // a spare init not used for this long is dropped
  bool egress = false;         // Limits::egress: the proxy's environment, TCP sockets allowed
  // Every program's environment variables, built once (shared: Settings is copied).
  std::shared_ptr<const ProgramEnvironment> environment;
  int landlock_ruleset = -1;  // built once, applied in every program
  SeccompProgram seccomp;     // compiled once, loaded into every program
};

// Writes a status record (a program's end, or why it did not start) on `fd`. Allocates nothing.
void write_status(int fd, protocol::StatusKind kind, int value);
// Where a run's code file is written.
std::string code_path_for(const protocol::Header& h);
// A transfer process: confined, then serves the transfer on `request`/`reply`, its end on
// `status`.
[[noreturn]] void run_transfer(const Settings& s, int request, int reply, int status);
// In a call's or an interpreter's init: starts what the order asked for and stays its init.
[[noreturn]] void run_order(const Settings& s, const protocol::Header& h, UniqueFd* fds,
                            std::size_t count);
// A spare init: waits on `channel` for the next call's order, then serves it as run_order.
[[noreturn]] void serve_as_spare(const Settings& s, int channel);

}  // namespace sandgate::sandbox
