// sandgate_conformance_server: the production gateway (same flags, auth, transports, execute
// and end_sandbox) plus the MCP conformance suite's fixtures — content and diagnostic tools,
// input_required tools, resources, prompts and completion. A test binary only: never
// installed, never part of the sandgate binary.
#include <memory>

#include "fixture_methods.hpp"
#include "fixture_tools.hpp"
#include "input_required_tools.hpp"
#include "request_state.hpp"
#include "server/gateway/gateway.hpp"
#include "task_tools.hpp"

int main(int argc, char** argv, char** envp) {
  namespace conformance = sandgate::conformance;
  conformance::FixtureMethods methods;
  auto signer = std::make_shared<const conformance::RequestStateSigner>();
  sandgate::server::GatewayExtras extras;
  extras.add_tools = [signer](sandgate::server::ToolRegistry& tools, sandgate::session::Registry&) {
    conformance::add_fixture_tools(tools);
    conformance::add_input_required_tools(tools, signer);
    conformance::add_task_tools(tools);
  };
  extras.extension = &methods;
  return sandgate::server::gateway_main(argc, argv, envp, extras);
}
