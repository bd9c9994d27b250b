#pragma once
// Places in a bounded set of calls in flight — one upstream's, all tenants together — and each
// tenant's share of them (issue #45): a call beyond either waits, until a place is free or its
// deadline passes. A tenant's share is the smaller of its fixed bound and an equal part of the
// capacity among the tenants active now (holding a place or waiting for one), so that however
// many tenants come, two busy ones never hold every place: a place freed goes to a tenant below
// its part. Places already held are kept; the parts apply to new takes. Waiters are woken on every
// release (and look again every 50 ms, so a wake-up lost to a race costs that much, never the
// deadline). Thread-safe.
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <string>

namespace sandgate::upstream {

class SlotGate : public std::enable_shared_from_this<SlotGate> {
 public:
  // `capacity`: places in all; `share`: the most one key (a tenant) may ever hold.
  SlotGate(std::uint32_t capacity, std::uint32_t share) : capacity_(capacity), share_(share) {}

  // A place held until destroyed.
  class Slot {
   public:
    Slot() = default;
    Slot(std::shared_ptr<SlotGate> gate, std::string key)
        : gate_(std::move(gate)), key_(std::move(key)) {}
    Slot(Slot&&) = default;
    Slot& operator=(Slot&&) = default;
    ~Slot() {
      if (gate_) gate_->release(key_);
    }
    explicit operator bool() const { return gate_ != nullptr; }

   private:
    std::shared_ptr<SlotGate> gate_;
    std::string key_;
  };

  // An empty Slot when the deadline passed first. Cancelling the awaiting coroutine throws.
  boost::asio::awaitable<Slot> acquire(std::string key,
                                       std::chrono::steady_clock::time_point deadline);
  // What `key` may hold now: its fixed share, or less while other keys are active.
  std::uint32_t share_for(const std::string& key) const;
  std::uint32_t held() const;

 private:
  bool try_take_locked(const std::string& key);
  std::uint32_t share_locked(const std::string& key) const;
  void release(const std::string& key);
  void stop_waiting(const std::string& key);

  const std::uint32_t capacity_, share_;
  mutable std::mutex mutex_;
  std::uint32_t held_ = 0;
  std::map<std::string, std::uint32_t> per_key_;  // places held, by key (only keys holding)
  std::map<std::string, std::uint32_t> wanting_;  // acquires waiting, by key (only keys waiting)
  std::uint64_t next_waiter_ = 0;
  struct Waiter {
    std::uint64_t id;
    boost::asio::any_io_executor executor;
    std::shared_ptr<boost::asio::steady_timer> timer;
  };
  std::list<Waiter> waiters_;
};

}  // namespace sandgate::upstream
