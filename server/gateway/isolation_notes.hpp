#pragma once
// What the host's isolation lacks although execute still works: each note is logged as a
// warning at start and shown in /readyz, so an operator sees a weaker sandbox without having
// to run --check-isolation.
#include <string>
#include <vector>

#include "sandbox/host.hpp"

namespace sandgate::server {

// One line per missing layer; empty when nothing is missing or execute is refused anyway
// (then /readyz already says why).
std::vector<std::string> isolation_notes(const sandbox::IsolationReport& report);

}  // namespace sandgate::server
