#include "egress/connection_shares.hpp"

#include <algorithm>

namespace sandgate::egress {

ConnectionShares::ConnectionShares(std::size_t total, std::size_t per_tenant)
    : total_(std::max<std::size_t>(1, total)),
      per_tenant_(std::clamp<std::size_t>(per_tenant, 1, std::max<std::size_t>(1, total))) {}

std::string ConnectionShares::take(const std::string& tenant) {
  std::lock_guard lock(mutex_);
  auto it = per_tenant_open_.find(tenant);
  std::size_t mine = it == per_tenant_open_.end() ? 0 : it->second;
  if (mine >= per_tenant_)
    return "this tenant already has its share of the gateway's egress connections (" +
           std::to_string(per_tenant_) + ") open";
  if (open_ >= total_) return "the gateway's egress connections are all in use; try again soon";
  ++open_;
  ++per_tenant_open_[tenant];
  return "";
}

void ConnectionShares::give_back(const std::string& tenant) {
  std::lock_guard lock(mutex_);
  auto it = per_tenant_open_.find(tenant);
  if (it == per_tenant_open_.end()) return;
  --open_;
  if (--it->second == 0) per_tenant_open_.erase(it);
}

std::size_t ConnectionShares::open() const {
  std::lock_guard lock(mutex_);
  return open_;
}

std::size_t ConnectionShares::open_for(const std::string& tenant) const {
  std::lock_guard lock(mutex_);
  auto it = per_tenant_open_.find(tenant);
  return it == per_tenant_open_.end() ? 0 : it->second;
}

}  // namespace sandgate::egress
