#pragma once
// What a test puts around the sandgate binary before ServerProcess starts it: a port chosen
// beforehand, a cgroup of its own on a pure cgroup v2 host, and the command line.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace sandgate::test {

// A loopback port free a moment ago, for gateways that must know each other's addresses before
// they start (replicas and their --peers): one of this test process's own block below the
// ephemeral range, so that no other test's gateway is given it meanwhile.
int free_port();

// On a pure cgroup v2 host (the VM stage sets SANDGATE_TEST_CGROUP_PARENT) a gateway gets a
// cgroup of its own below that folder, as a container or a systemd unit would give it: a cgroup
// shared with the test runner could not hand controllers to sandboxes. Gateways started with the
// same `name` share one, as a service restarted in its unit does: a later one joins the earlier
// one's leaf (its cgroup has controllers enabled, so nothing may join it directly). Elsewhere:
// no wrapper.
std::vector<std::string> own_cgroup_wrapper(const std::string& name = "");
// The same wrapper as the start of a shell command line: each word single-quoted, then a space
// ("" elsewhere).
std::string own_cgroup_shell_prefix();

// The sandbox host ids [first, first + count) this test process's gateways give their sandboxes
// (sandgate_command passes --sandbox-uid-base): integration tests run side by side, and two
// gateways on one host would otherwise both start at 1,000,000 — their sandboxes sharing host
// uids, one's processes counting against the other's RLIMIT_NPROC, and one test's scan for its
// programs finding another's. Slots of 4096 ids (--max-sandboxes up to 2048) from 10,000,000 by
// process id, clear of the sandbox tests' default range. Only in the host's own user namespace,
// where every id is mapped; elsewhere nothing (the gateway picks as it would in production).
struct IdRange {
  std::uint32_t first = 0;
  std::uint32_t count = 0;
  bool contains(std::uint64_t id) const { return id >= first && id < std::uint64_t{first} + count; }
};
std::optional<IdRange> own_sandbox_ids();

// `binary` on an ephemeral loopback port, logging warnings and worse, without the pool of ready
// sandboxes (`--pool-size 0`: dozens of gateways side by side each warming two interpreters
// would load a 2-core machine for nothing; tests of the pool pass their own --pool-size, which
// comes later and wins), followed by `args`; run by `wrapper` (which must exec it), all of it
// inside own_cgroup_wrapper(`cgroup`).
std::vector<std::string> sandgate_command(const std::string& binary,
                                          const std::vector<std::string>& args,
                                          const std::vector<std::string>& wrapper = {},
                                          const std::string& cgroup = "");

}  // namespace sandgate::test
