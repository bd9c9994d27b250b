#include "standard_tools.hpp"

#include "end_sandbox.hpp"
#include "execute.hpp"

namespace sandgate::server {

void add_standard_tools(ToolRegistry& tools, const Config& config, session::Registry& registry,
                        Metrics& metrics) {
  ToolLimits limits{config.timeout_default_s, config.timeout_max_s,
                    config.stdin_max_bytes,   config.host.limits.output_bytes,
                    config.progress_interval, config.registry.idle_timeout};
  limits.task_timeout_max_s = config.task_timeout_max_s;
  limits.task_after = config.task_after;
  limits.file_in_max_bytes = config.file_in_max_bytes;
  limits.files_in_max_bytes = config.files_in_max_bytes;
  limits.return_files_max = config.return_files_max;
  limits.file_inline_max_bytes = config.file_inline_max_bytes;
  limits.resource_read_max_bytes = config.resource_read_max_bytes;
  // The files execute returns are resources the MCP methods serve (resources/read).
  auto resources =
      std::make_unique<FileResources>(limits.resource_read_max_bytes, config.registry.replica_name);
  tools.add(std::make_unique<ExecuteTool>(limits, registry, metrics, resources.get()));
  tools.set_resources(std::move(resources));
  tools.add(std::make_unique<EndSandboxTool>(registry));
}

}  // namespace sandgate::server
