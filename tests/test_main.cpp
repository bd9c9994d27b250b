// Test runner: the same binary doubles as a sandbox supervisor, because sandboxes exec
// /proc/self/exe in supervisor mode.
#define CATCH_CONFIG_RUNNER
#include <signal.h>

#include <catch2/catch.hpp>

#include "sandbox/inside/supervisor.hpp"

int main(int argc, char** argv) {
  if (sandgate::sandbox::is_supervisor_invocation(argc, argv))
    sandgate::sandbox::supervisor_main(argc, argv);
  ::signal(SIGPIPE, SIG_IGN);
  return Catch::Session().run(argc, argv);
}
