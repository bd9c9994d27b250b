#include "tool_registry.hpp"

#include <stdexcept>

namespace sandgate::server {

void ToolRegistry::add(std::unique_ptr<Tool> tool) {
  if (find(tool->name())) throw std::logic_error("tool added twice: " + tool->name());
  tools_.push_back(std::move(tool));
}

Tool* ToolRegistry::find(std::string_view name) const {
  for (const auto& tool : tools_)
    if (tool->name() == name) return tool.get();
  return nullptr;
}

nlohmann::json ToolRegistry::definitions(const auth::Tenant* tenant) const {
  auto list = nlohmann::json::array();
  for (const auto& tool : tools_)
    list.push_back(tenant ? tool->definition_for(*tenant) : tool->definition());
  return list;
}

}  // namespace sandgate::server
