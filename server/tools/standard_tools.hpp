#pragma once
// The tools the production gateway offers, in their listed order, with limits from its config.
#include "server/config.hpp"
#include "server/metrics.hpp"
#include "session/registry.hpp"
#include "tool_registry.hpp"

namespace sandgate::server {

void add_standard_tools(ToolRegistry& tools, const Config& config, session::Registry& registry,
                        Metrics& metrics);

}  // namespace sandgate::server
