#pragma once
// The whole gateway assembled from its parts, with its start-up and two-phase shutdown.
#include "config.hpp"

namespace sandgate::server {

// Runs until SIGTERM/SIGINT; returns the process exit code.
int run_gateway(const Config& config);
// Prints the isolation report and runs a probe sandbox; returns 0 when execute would work.
int check_isolation(const Config& config);

}  // namespace sandgate::server
