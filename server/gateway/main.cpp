// sandgate: a Streamable HTTP MCP gateway whose `execute` tool runs model-written code in a
// sandbox of its caller's own.
#include "server/gateway/gateway.hpp"

int main(int argc, char** argv, char** envp) {
  return sandgate::server::gateway_main(argc, argv, envp);
}
