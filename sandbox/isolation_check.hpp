#pragma once
// What isolation this machine offers the sandboxes, checked once when the gateway starts: user
// namespaces, seccomp, Landlock, the uid range and the cgroups. The report and the uid-range
// rules are declared in host.hpp.
#include "host.hpp"

namespace sandgate::sandbox {

// Probes the machine (and, unless max_sandboxes is 0, sets up the cgroups) and decides the
// mode: "full", "no-cgroups" or "refused", with the reason.
IsolationReport assess_isolation(const HostConfig& config);

}  // namespace sandgate::sandbox
