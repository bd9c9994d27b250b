#pragma once
// The `execute` tool's MCP definition: its input and output schemas and the description the
// model reads, with the limits in force written into them.
#include <chrono>
#include <nlohmann/json.hpp>
#include <string>

#include "server/tools/tool_limits.hpp"

namespace sandgate::server {

nlohmann::json execute_tool_definition(const ToolLimits& limits);
// "30 minutes", for texts the model reads.
std::string idle_text(std::chrono::seconds idle);
// The languages execute runs, by their names in the schema.
nlohmann::json language_names();

}  // namespace sandgate::server
