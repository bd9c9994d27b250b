#pragma once
// The tools the production gateway offers, in their listed order.
#include "server/metrics/metrics.hpp"
#include "server/tools/tool_limits.hpp"
#include "session/registry.hpp"
#include "tool_registry.hpp"

namespace sandgate::server {

void add_standard_tools(ToolRegistry& tools, const ToolLimits& limits, session::Registry& registry,
                        Metrics& metrics);

}  // namespace sandgate::server
