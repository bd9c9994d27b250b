#pragma once
#include <cstdint>
// The gateway-wide bound on execute calls running at once (--max-concurrent-calls) and waiting
// (--max-queued-calls), shared fairly between tenants: FairShare decides who goes next, this
// makes coroutines wait for it.
#include <boost/asio/awaitable.hpp>
#include <boost/asio/experimental/concurrent_channel.hpp>
#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>

#include "fair_share.hpp"

namespace sandgate::session {

// The gateway-wide pool of call slots (--max-concurrent-calls, --max-queued-calls).
struct CallPoolConfig {
  std::uint32_t max_concurrent = 64;
  std::uint32_t max_queued = 1024;

  bool operator==(const CallPoolConfig&) const = default;
};

class CallSlots {
 public:
  // A held slot; given back on destruction.
  class Permit {
   public:
    Permit() = default;
    Permit(CallSlots* owner, std::string tenant) : owner_(owner), tenant_(std::move(tenant)) {}
    Permit(Permit&& o) noexcept
        : owner_(std::exchange(o.owner_, nullptr)), tenant_(std::move(o.tenant_)) {}
    Permit& operator=(Permit&& o) noexcept {
      if (this != &o) {
        reset();
        owner_ = std::exchange(o.owner_, nullptr);
        tenant_ = std::move(o.tenant_);
      }
      return *this;
    }
    ~Permit() { reset(); }
    explicit operator bool() const { return owner_ != nullptr; }
    void reset() {
      if (owner_) std::exchange(owner_, nullptr)->release(tenant_);
    }

   private:
    CallSlots* owner_ = nullptr;
    std::string tenant_;
  };

  CallSlots(std::size_t slots, std::size_t max_waiting) : share_(slots, max_waiting) {}

  // Waits for a slot for a call of `tenant`, which may run `tenant_cap` calls at once. An empty
  // Permit means the gateway is busy: no waiting place was left, or a tenant with fewer
  // waiting calls took this one's place.
  boost::asio::awaitable<Permit> acquire(std::string tenant, std::size_t tenant_cap);

  std::size_t waiting() const;
  std::size_t running(const std::string& tenant) const;

 private:
  // Capacity 1: the answer can be sent before the waiter starts waiting, and nothing is lost.
  using Signal =
      boost::asio::experimental::concurrent_channel<void(boost::system::error_code, bool)>;
  void release(const std::string& tenant);

  mutable std::mutex mutex_;
  FairShare share_;
  std::unordered_map<FairShare::Ticket, std::shared_ptr<Signal>> waiting_;
};

// A gateway-wide bound shared between tenants the same way: each tenant holds at most
// `tenant_cap` of `slots` at once (the shared reads of resources/read).
struct TenantBound {
  CallSlots& slots;
  std::size_t tenant_cap;
};

}  // namespace sandgate::session
