// sandgate_conformance_server: the production gateway (same flags, auth, transports, execute
// and end_sandbox) plus the MCP conformance suite's fixtures — content and diagnostic tools,
// input_required tools, resources, prompts and completion. A test binary only: never
// installed, never part of the sandgate binary.
#include <signal.h>

#include <iostream>
#include <memory>

#include "fixture_methods.hpp"
#include "fixture_tools.hpp"
#include "input_required_tools.hpp"
#include "request_state.hpp"
#include "sandbox/supervisor.hpp"
#include "server/config.hpp"
#include "server/gateway.hpp"
#include "server/logging.hpp"

int main(int argc, char** argv, char** envp) {
  // This binary is every sandbox's supervisor too (exec'd as /proc/self/exe).
  if (sandgate::sandbox::is_supervisor_invocation(argc, argv))
    sandgate::sandbox::supervisor_main(argc, argv);
  ::signal(SIGPIPE, SIG_IGN);

  auto parsed = sandgate::server::parse_config(argc, argv, envp);
  if (!parsed.config) {
    (parsed.exit_code == 0 ? std::cout : std::cerr) << parsed.message;
    return parsed.exit_code;
  }
  sandgate::server::init_logging(parsed.config->log_level);
  if (parsed.config->check_isolation) return sandgate::server::check_isolation(*parsed.config);

  namespace conformance = sandgate::conformance;
  conformance::FixtureMethods methods;
  auto signer = std::make_shared<const conformance::RequestStateSigner>();
  sandgate::server::GatewayExtras extras;
  extras.add_tools = [signer](sandgate::server::ToolRegistry& tools, sandgate::session::Registry&) {
    conformance::add_fixture_tools(tools);
    conformance::add_input_required_tools(tools, signer);
  };
  extras.extension = &methods;
  return sandgate::server::run_gateway(*parsed.config, extras);
}
