#pragma once
// The wire format between the gateway and a sandbox's supervisor.
//
// The control channel is a SOCK_SEQPACKET socketpair, so every message keeps its boundary and
// can carry file descriptors (SCM_RIGHTS). The gateway never sends program bytes over it: the
// code travels in a memfd and stdio in pipes the gateway owns, so a message stays tiny.
#include <cstdint>

namespace sandgate::sandbox::protocol {

enum class MessageType : std::uint32_t {
  ready = 1,   // supervisor -> gateway: the sandbox is set up
  failed = 2,  // supervisor -> gateway: setup failed; text follows the header
  // gateway -> supervisor: fds [code memfd, stdin, stdout, stderr, status], and for Python a
  // sixth: the figure channel's write end (the program gets it at fd 3, see sitecustomize.py)
  run = 3,
  kill = 4,    // gateway -> supervisor: kill every process of one call
  reaped = 5,  // supervisor -> gateway: a killed call's processes are all gone (after `kill`)
  // gateway -> supervisor: start a language's persistent interpreter; call_id names it from now
  // on (`kill` ends it). fds [requests (read end), replies (write end), stdout, stderr, status]
  start_interpreter = 6,
  // gateway -> supervisor (an InterruptRequest): a call in that interpreter is over its time:
  // kill the processes it started, then SIGINT the interpreter.
  interrupt = 7,
  interrupted = 8,  // supervisor -> gateway: done (after `interrupt`)
  // gateway -> supervisor: fork a transfer process (file_transfer.hpp) as the program's uid,
  // confined like a program, that moves files in or out of /work; call_id names it (`kill`
  // ends it). fds [request memfd, reply memfd (unpack: the archive), status]; it reports on
  // status when done.
  transfer = 9,
};

enum class Language : std::uint32_t { python = 0, javascript = 1, bash = 2 };

struct Header {
  MessageType type;
  std::uint32_t call_id;
  Language language;
  std::uint32_t reserved;
};

constexpr int kRunFdCount = 5;
constexpr int kRunFdCountWithFigures = 6;
constexpr int kInterpreterFdCount = 5;
constexpr int kTransferFdCount = 3;

struct InterruptRequest {
  Header header;
  // CLOCK_BOOTTIME when the call began: processes of the interpreter's pid namespace started
  // since then are the call's.
  std::uint64_t call_started_ns;
};

// Written once by the call's init process to the status pipe when the program ends (and by a
// transfer process when it is done: `exited` with 0 or the errno of a failed transfer).
enum class StatusKind : std::uint32_t { exited = 1, spawn_failed = 2 };
struct Status {
  StatusKind kind;
  std::int32_t value;  // wait status for `exited`, errno for `spawn_failed`
};

// The supervisor finds its control socket here after exec.
constexpr int kControlFd = 3;
// With an environment's layer (Limits::layer_dir): the layer's directory (O_PATH), which the
// supervisor binds into its root and closes.
constexpr int kLayerFd = 4;
// argv[0] that turns the sandgate binary into a supervisor.
constexpr const char* kSupervisorArgv0 = "sandgate-supervisor";
// A sandbox with egress (Limits::egress) has its proxy here, on its own loopback: its network
// namespace has no other interface. The supervisor listens and hands the socket to the gateway
// with its `ready` report; the gateway accepts on it (egress/).
constexpr std::uint16_t kEgressProxyPort = 3128;

// A sandbox with a tool channel (Limits::tool_channel, issue #45) has this unix socket in its
// own root: the supervisor binds it before any program runs and hands it over with its `ready`
// report (after the egress proxy's socket, when both); the gateway answers on it (upstream/).
// Only this sandbox's processes see the path: it lives in the sandbox's mount namespace.
constexpr const char* kToolChannelSocket = "/sandgate/tools.sock";

// The supervisor's argv word of features (argv[7]): a sum of these.
constexpr unsigned kFeatureEgress = 1;
constexpr unsigned kFeatureToolChannel = 2;

}  // namespace sandgate::sandbox::protocol
