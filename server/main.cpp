// sandgate: a Streamable HTTP MCP gateway whose `execute` tool runs model-written code in a
// sandbox of each session's own.
#include <signal.h>

#include <iostream>

#include "config.hpp"
#include "gateway.hpp"
#include "logging.hpp"
#include "sandbox/supervisor.hpp"

int main(int argc, char** argv, char** envp) {
  // The same binary is every sandbox's supervisor (exec'd as /proc/self/exe).
  if (sandgate::sandbox::is_supervisor_invocation(argc, argv))
    sandgate::sandbox::supervisor_main(argc, argv);
  // Writes to a closed pipe or socket are errors to handle, not a reason to die.
  ::signal(SIGPIPE, SIG_IGN);

  auto parsed = sandgate::server::parse_config(argc, argv, envp);
  if (!parsed.config) {
    (parsed.exit_code == 0 ? std::cout : std::cerr) << parsed.message;
    return parsed.exit_code;
  }
  sandgate::server::init_logging(parsed.config->log_level);
  if (parsed.config->check_isolation) return sandgate::server::check_isolation(*parsed.config);
  return sandgate::server::run_gateway(*parsed.config);
}
