#include "upstream/upstreams.hpp"

#include <algorithm>

namespace sandgate::upstream {

Upstreams::Upstreams(boost::asio::any_io_executor executor, UpstreamSet set, bool single_tenant)
    : executor_(std::move(executor)), single_tenant_(single_tenant) {
  replace(std::move(set));
}

std::shared_ptr<const Upstream> Upstreams::make(
    std::shared_ptr<const UpstreamDefinition> definition) const {
  auto entry = std::make_shared<Upstream>();
  std::uint32_t capacity = definition->limits.max_concurrency;
  entry->gate = std::make_shared<SlotGate>(
      capacity, single_tenant_ ? capacity : std::max<std::uint32_t>(1, capacity / 2));
  entry->catalog = ToolCatalog::create(executor_, definition);
  entry->definition = std::move(definition);
  return entry;
}

void Upstreams::replace(UpstreamSet set) {
  std::map<std::string, std::shared_ptr<const Upstream>> next;
  std::lock_guard lock(mutex_);
  for (auto& [name, definition] : set) {
    auto kept = upstreams_.find(name);
    if (kept != upstreams_.end() && *kept->second->definition == *definition)
      next.emplace(name, kept->second);
    else
      next.emplace(name, make(definition));
  }
  upstreams_ = std::move(next);
}

std::shared_ptr<const Upstream> Upstreams::find(const std::string& name) const {
  std::lock_guard lock(mutex_);
  auto it = upstreams_.find(name);
  return it == upstreams_.end() ? nullptr : it->second;
}

std::vector<std::string> Upstreams::names() const {
  std::lock_guard lock(mutex_);
  std::vector<std::string> all;
  for (const auto& entry : upstreams_) all.push_back(entry.first);
  return all;
}

}  // namespace sandgate::upstream
