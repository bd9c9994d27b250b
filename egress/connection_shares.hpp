#pragma once
// The connections every relay of one gateway holds open at once, and each tenant's share of
// them. The whole gateway relays at most `total` (each holds descriptors and buffers of the
// gateway's own); one tenant at most `per_tenant` of those, so that a tenant holding all it may
// leaves the others room (the rule of the call slots: half each unless only one tenant exists).
// Thread-safe: every relay's strand takes and gives back places.
#include <cstddef>
#include <mutex>
#include <string>
#include <unordered_map>

namespace sandgate::egress {

class ConnectionShares {
 public:
  ConnectionShares(std::size_t total, std::size_t per_tenant);

  // Takes a place for one more connection of `tenant`: "" when taken (give it back with
  // give_back), otherwise why not, worded for the client (an HTTP 429's reason).
  std::string take(const std::string& tenant);
  void give_back(const std::string& tenant);

  std::size_t open() const;
  std::size_t open_for(const std::string& tenant) const;

 private:
  const std::size_t total_;
  const std::size_t per_tenant_;
  mutable std::mutex mutex_;
  std::size_t open_ = 0;
  // Only tenants with a connection open: bounded by the connections, not by the tenants seen.
  std::unordered_map<std::string, std::size_t> per_tenant_open_;
};

// A place taken from ConnectionShares, given back when this goes.
class SharePlace {
 public:
  SharePlace(ConnectionShares& shares, std::string tenant)
      : shares_(&shares), tenant_(std::move(tenant)) {}
  SharePlace(const SharePlace&) = delete;
  SharePlace& operator=(const SharePlace&) = delete;
  ~SharePlace() { shares_->give_back(tenant_); }

 private:
  ConnectionShares* shares_;
  std::string tenant_;
};

}  // namespace sandgate::egress
