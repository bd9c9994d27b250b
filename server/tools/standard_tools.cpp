#include "standard_tools.hpp"

#include "end_sandbox.hpp"
#include "execute_tool.hpp"

namespace sandgate::server {

void add_standard_tools(ToolRegistry& tools, const ToolLimits& limits, session::Registry& registry,
                        Metrics& metrics,
                        std::shared_ptr<const environment::Environments> environments,
                        std::shared_ptr<const upstream::Upstreams> upstreams) {
  // The files execute returns are resources the MCP methods serve (resources/read).
  auto resources =
      std::make_unique<FileResources>(limits.resource_read_max_bytes, registry.replica_name());
  tools.add(std::make_unique<ExecuteTool>(limits, registry, metrics, resources.get(),
                                          std::move(environments), std::move(upstreams)));
  tools.set_resources(std::move(resources));
  tools.add(std::make_unique<EndSandboxTool>(registry));
}

}  // namespace sandgate::server
