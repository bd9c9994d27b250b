#pragma once
// The whole environment of every program a sandbox starts: nothing of the gateway's reaches it.
// Built once by the supervisor, before any program runs: a program's process reads it while it
// shares its init's memory and may allocate nothing.
#include <string>
#include <vector>

namespace sandgate::sandbox {

class ProgramEnvironment {
 public:
  // `egress`: the proxy's variables (Limits::egress). `layer`: an environment's packages are
  // found under kLayerMountPoint; `layer_writable`: this sandbox builds that layer, so stock
  // `pip install` and `npm install -g` write into it. `gateway_ca`: TLS clients are pointed at
  // the bundle with the gateway CA (Limits::egress_gateway_ca). `tool_channel`: sandgate-tool
  // and sandgate_tools are on the paths (Limits::tool_channel).
  ProgramEnvironment(bool egress, bool layer, bool layer_writable, bool gateway_ca,
                     bool tool_channel);
  ProgramEnvironment(const ProgramEnvironment&) = delete;
  ProgramEnvironment& operator=(const ProgramEnvironment&) = delete;

  // envp for execve; `figures`: a fresh Python program's, whose figure channel is at fd 3.
  char* const* envp(bool figures) const { return figures ? with_figures_.data() : plain_.data(); }
  // Every variable, NAME=value (for tests and the isolation report).
  const std::vector<std::string>& variables() const { return variables_; }

 private:
  std::vector<std::string> variables_;
  std::string figures_variable_;
  std::vector<char*> plain_;
  std::vector<char*> with_figures_;
};

// Where an environment's layer keeps what its build installs, under kLayerMountPoint.
constexpr const char* kLayerPythonDir = "/env/python";  // pip install --target
constexpr const char* kLayerNodeDir = "/env/node";      // npm's global prefix

}  // namespace sandgate::sandbox
