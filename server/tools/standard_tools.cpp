#include "standard_tools.hpp"

#include "execute.hpp"

namespace sandgate::server {

void add_standard_tools(ToolRegistry& tools, const Config& config, Metrics& metrics) {
  ToolLimits limits{config.timeout_default_s, config.timeout_max_s, config.stdin_max_bytes,
                    config.host.limits.output_bytes};
  tools.add(std::make_unique<ExecuteTool>(limits, metrics));
}

}  // namespace sandgate::server
