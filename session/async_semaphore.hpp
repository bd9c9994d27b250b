#pragma once
// A FIFO semaphore for coroutines: permits are handed out in arrival order, and at most
// `max_waiters` may wait (beyond that acquire() says no at once). With one permit it is the
// per-session call queue; with N it is the gateway-wide concurrency limit.
#include <boost/asio/awaitable.hpp>
#include <boost/asio/experimental/concurrent_channel.hpp>
#include <cstddef>
#include <deque>
#include <memory>
#include <mutex>

namespace sandgate::session {

class AsyncSemaphore {
 public:
  // Held permit; released on destruction.
  class Permit {
   public:
    Permit() = default;
    explicit Permit(AsyncSemaphore* owner) : owner_(owner) {}
    Permit(Permit&& o) noexcept : owner_(std::exchange(o.owner_, nullptr)) {}
    Permit& operator=(Permit&& o) noexcept {
      if (this != &o) {
        reset();
        owner_ = std::exchange(o.owner_, nullptr);
      }
      return *this;
    }
    ~Permit() { reset(); }
    explicit operator bool() const { return owner_ != nullptr; }
    void reset() {
      if (owner_) std::exchange(owner_, nullptr)->release();
    }

   private:
    AsyncSemaphore* owner_ = nullptr;
  };

  AsyncSemaphore(std::size_t permits, std::size_t max_waiters)
      : available_(permits), max_waiters_(max_waiters) {}

  // An empty Permit means the queue was full.
  boost::asio::awaitable<Permit> acquire();
  // A permit only when one is free and nobody waits; never waits.
  Permit try_acquire();
  std::size_t waiting() const;
  std::size_t available() const;

 private:
  using Signal = boost::asio::experimental::concurrent_channel<void(boost::system::error_code)>;
  void release();

  mutable std::mutex mutex_;
  std::size_t available_;
  std::size_t max_waiters_;
  std::deque<std::shared_ptr<Signal>> waiters_;
};

}  // namespace sandgate::session
