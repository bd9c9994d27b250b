#pragma once
// What one sandbox may use, and what that use costs. Defaults follow the spec.
#include <chrono>
#include <cstdint>
#include <string>

namespace sandgate::sandbox {

// Where an environment's layer appears inside the sandbox.
constexpr const char* kLayerMountPoint = "/env";

struct Limits {
  std::uint64_t memory_bytes = 1ull << 30;  // memory cgroup limit (includes tmpfs pages)
  double cpus = 1.0;                        // CPU quota in vCPUs
  std::uint32_t max_processes = 256;        // pids cgroup limit
  std::uint64_t work_bytes = 512ull << 20;  // size of the writable /work tmpfs
  std::uint64_t tmp_bytes = 64ull << 20;    // size of /tmp tmpfs
  std::uint64_t output_bytes = 1ull << 20;  // stdout + stderr kept per call
  // The sandbox ends when its spend reaches this, or this long after creation. A session's
  // sandbox gets what remains of the session's (session/session_account.hpp).
  double spend_cap_usd = 1.0;
  std::chrono::seconds lifetime{30 * 60};
  // Whether the sandbox gets an egress proxy (issue #30): its programs may open TCP sockets, which
  // reach nothing but its own loopback, where the gateway's proxy listens (kEgressProxyPort) and
  // decides, by its tenant's allow-list, what each connection may reach. False: AF_UNIX only.
  bool egress = false;
  // An environment's layer (issue #43), mounted at kLayerMountPoint: its directory on the host
  // ("": none, the system as it is). Read-only, nosuid, nodev in every sandbox that runs in it;
  // writable only for the build that fills it (the directory is then given to the program's uid).
  std::string layer_dir;
  bool layer_writable = false;
  // With egress: its programs' TLS clients are pointed at a bundle that adds the gateway CA
  // (HostConfig::egress_ca_pem), because its tenant holds secrets whose hosts the proxy
  // terminates TLS for (issue #44). Without it they keep their own trust (a `pip --cert`, a
  // REQUESTS_CA_BUNDLE of the program's), which a bundle variable set for every sandbox would
  // override.
  bool egress_gateway_ca = false;
  // Whether the sandbox's programs may call its tenant's upstream MCP tools (issue #45, code
  // mode): the supervisor listens on kToolChannelSocket (protocol.hpp) and hands the socket to
  // the gateway, which answers on it; sandgate_tools (Python, JavaScript) and sandgate-tool
  // (bash) are on the programs' paths.
  bool tool_channel = false;

  bool operator==(const Limits&) const = default;
};

// List prices from the seed guide; spend = cpu_hours * vcpu_hour + gib_hours * gib_hour.
struct Prices {
  double usd_per_vcpu_hour = 0.0504;
  double usd_per_gib_hour = 0.0162;
  // Bytes relayed by the egress proxy, both ways (charged by whoever relays them).
  double usd_per_egress_gib = 0.09;

  bool operator==(const Prices&) const = default;
};

}  // namespace sandgate::sandbox
