#pragma once
// The tools a server offers, in the order they were added: tools/list answers in that fixed
// order (2026-07-28 asks for a stable order so that clients can cache the list).
#include <memory>
#include <nlohmann/json.hpp>
#include <string_view>
#include <vector>

#include "tool.hpp"

namespace sandgate::server {

class ToolRegistry {
 public:
  void add(std::unique_ptr<Tool> tool);
  Tool* find(std::string_view name) const;
  nlohmann::json definitions() const;  // the tools/list array

 private:
  std::vector<std::unique_ptr<Tool>> tools_;
};

}  // namespace sandgate::server
