#pragma once
// What a test puts around the sandgate binary before ServerProcess starts it: a port chosen
// beforehand, a cgroup of its own on a pure cgroup v2 host, and the command line.
#include <string>
#include <vector>

namespace sandgate::test {

// A loopback port free a moment ago, for gateways that must know each other's addresses before
// they start (replicas and their --peers).
int free_port();

// On a pure cgroup v2 host (the VM stage sets SANDGATE_TEST_CGROUP_PARENT) a gateway gets a
// cgroup of its own below that folder, as a container or a systemd unit would give it: a cgroup
// shared with the test runner could not hand controllers to sandboxes. Gateways started with the
// same `name` share one, as a service restarted in its unit does: a later one joins the earlier
// one's leaf (its cgroup has controllers enabled, so nothing may join it directly). Elsewhere:
// no wrapper.
std::vector<std::string> own_cgroup_wrapper(const std::string& name = "");

// `binary` on an ephemeral loopback port, logging warnings and worse, followed by `args`; run
// by `wrapper` (which must exec it), all of it inside own_cgroup_wrapper(`cgroup`).
std::vector<std::string> sandgate_command(const std::string& binary,
                                          const std::vector<std::string>& args,
                                          const std::vector<std::string>& wrapper = {},
                                          const std::string& cgroup = "");

}  // namespace sandgate::test
