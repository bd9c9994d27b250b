#include "async_semaphore.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace sandgate::session {
namespace asio = boost::asio;

asio::awaitable<AsyncSemaphore::Permit> AsyncSemaphore::acquire() {
  std::shared_ptr<Signal> signal;
  {
    std::lock_guard lock(mutex_);
    if (available_ > 0 && waiters_.empty()) {
      --available_;
      co_return Permit(this);
    }
    if (waiters_.size() >= max_waiters_) co_return Permit();
    // Capacity 1: release() can signal before we start waiting, and nothing is lost.
    signal = std::make_shared<Signal>(co_await asio::this_coro::executor, 1);
    waiters_.push_back(signal);
  }
  co_await signal->async_receive(asio::as_tuple(asio::use_awaitable));
  // The releasing side handed its permit straight to us.
  co_return Permit(this);
}

AsyncSemaphore::Permit AsyncSemaphore::try_acquire() {
  std::lock_guard lock(mutex_);
  if (available_ == 0 || !waiters_.empty()) return Permit();
  --available_;
  return Permit(this);
}

void AsyncSemaphore::release() {
  std::shared_ptr<Signal> next;
  {
    std::lock_guard lock(mutex_);
    if (waiters_.empty()) {
      ++available_;
      return;
    }
    next = std::move(waiters_.front());
    waiters_.pop_front();
  }
  next->try_send(boost::system::error_code{});
}

std::size_t AsyncSemaphore::waiting() const {
  std::lock_guard lock(mutex_);
  return waiters_.size();
}

std::size_t AsyncSemaphore::available() const {
  std::lock_guard lock(mutex_);
  return available_;
}

}  // namespace sandgate::session
