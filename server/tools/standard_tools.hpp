#pragma once
// The tools the production gateway offers, in their listed order.
#include <memory>

#include "environment/environments.hpp"
#include "server/metrics/metrics.hpp"
#include "server/tools/tool_limits.hpp"
#include "session/registry.hpp"
#include "tool_registry.hpp"
#include "upstream/upstreams.hpp"

namespace sandgate::server {

// `environments`, `upstreams`: the operator's, or null when there are none.
void add_standard_tools(ToolRegistry& tools, const ToolLimits& limits, session::Registry& registry,
                        Metrics& metrics,
                        std::shared_ptr<const environment::Environments> environments = nullptr,
                        std::shared_ptr<const upstream::Upstreams> upstreams = nullptr);

}  // namespace sandgate::server
