#pragma once
// The whole gateway assembled from its parts, with its start-up and two-phase shutdown.
#include <functional>

#include "server/gateway/config.hpp"
#include "server/mcp/method_extension.hpp"
#include "server/tools/tool_registry.hpp"
#include "session/registry.hpp"

namespace sandgate::server {

// What a test-only server adds to the production gateway (the conformance suite's fixture
// tools, resources and prompts). The production binary passes nothing.
struct GatewayExtras {
  std::function<void(ToolRegistry&, session::Registry&)> add_tools;
  MethodExtension* extension = nullptr;
};

// Runs until SIGTERM/SIGINT; returns the process exit code.
int run_gateway(const Config& config, const GatewayExtras& extras = {});
// Prints the isolation report and runs a probe sandbox; returns 0 when execute would work.
int check_isolation(const Config& config);

// The whole of a gateway binary's main(): the supervisor when exec'd as one, else flags and
// environment parsed, then the gateway (or --check-isolation) with `extras`.
int gateway_main(int argc, char** argv, char** envp, const GatewayExtras& extras = {});

}  // namespace sandgate::server
