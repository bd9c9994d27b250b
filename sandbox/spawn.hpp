#pragma once
// Gateway side of sandbox creation: clone a process into new namespaces, map its ids, put it in
// its cgroups, then let it exec the supervisor. The clone child runs only raw system calls
// until exec, because the gateway is multi-threaded.
#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

#include "common/unique_fd.hpp"

namespace sandgate::sandbox {

struct IdMapping {
  // Inside the sandbox: 0 is the supervisor, `program_id` the programs. Outside: host ids.
  std::uint32_t host_root_id;
  std::uint32_t program_id;
  std::uint32_t host_program_id;
  bool privileged;  // false: an unprivileged gateway can map only its own id, onto 0
};

struct SpawnRequest {
  IdMapping ids;
  std::uint64_t work_bytes;
  std::uint64_t tmp_bytes;
  std::uint32_t max_processes;                        // per-uid process cap for programs (0: none)
  std::chrono::milliseconds spare_init_idle{60'000};  // HostConfig::spare_init_idle
  bool egress = false;                                // Limits::egress
  bool tool_channel = false;                          // Limits::tool_channel
  // Limits::layer_dir / layer_writable: opened by the clone child (still the gateway's host uid,
  // so the state directory's permissions need not let the sandbox's ids in) and handed to the
  // supervisor as protocol::kLayerFd, which binds it at kLayerMountPoint.
  std::string layer_dir;
  bool layer_writable = false;
  std::string egress_ca_pem;  // HostConfig::egress_ca_pem (with egress only)
  // Called with the child's pid before it is released (e.g. to join cgroups); may throw.
  std::function<void(pid_t)> before_release;
};

struct SpawnedSupervisor {
  pid_t pid = -1;
  UniqueFd control;  // SOCK_SEQPACKET, close-on-exec
  // With egress: the listening socket in the sandbox's network namespace, from its `ready`
  // report (await_setup_report).
  UniqueFd egress_listener;
  // With a tool channel: its listening unix socket (protocol::kToolChannelSocket).
  UniqueFd tool_listener;
  // Which of those the `ready` report brings, in this order (SpawnRequest's).
  bool reports_egress = false;
  bool reports_tool_channel = false;
};

// Throws std::system_error; on failure the child is killed and reaped.
SpawnedSupervisor spawn_supervisor(const SpawnRequest& request);

}  // namespace sandgate::sandbox
