#pragma once
// The tools a server offers, in the order they were added: tools/list answers in that fixed
// order (2026-07-28 asks for a stable order so that clients can cache the list).
#include <memory>
#include <nlohmann/json.hpp>
#include <string_view>
#include <vector>

#include "file_resources.hpp"
#include "tool.hpp"

namespace sandgate::server {

class ToolRegistry {
 public:
  void add(std::unique_ptr<Tool> tool);
  Tool* find(std::string_view name) const;
  // The tools/list array; as `tenant` sees it when given.
  nlohmann::json definitions(const auth::Tenant* tenant = nullptr) const;
  // The resources the tools mint (execute's returned files), served by resources/read; null
  // when no tool mints any (the resources capability is then not announced).
  void set_resources(std::unique_ptr<FileResources> resources) {
    resources_ = std::move(resources);
  }
  FileResources* resources() const { return resources_.get(); }

 private:
  std::vector<std::unique_ptr<Tool>> tools_;
  std::unique_ptr<FileResources> resources_;
};

}  // namespace sandgate::server
