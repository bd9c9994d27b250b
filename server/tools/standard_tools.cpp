#include "standard_tools.hpp"

#include "end_sandbox.hpp"
#include "execute.hpp"

namespace sandgate::server {

void add_standard_tools(ToolRegistry& tools, const Config& config, session::Registry& registry,
                        Metrics& metrics) {
  ToolLimits limits{config.timeout_default_s,  config.timeout_max_s,
                    config.stdin_max_bytes,    config.host.limits.output_bytes,
                    config.progress_interval,  config.registry.idle_timeout,
                    config.task_timeout_max_s, config.task_after};
  tools.add(std::make_unique<ExecuteTool>(limits, registry, metrics));
  tools.add(std::make_unique<EndSandboxTool>(registry));
}

}  // namespace sandgate::server
