#pragma once
// One operation in flight that several coroutines wait for (the negotiation of a client, the
// fetch of a tool list): each waits until it ends, its own deadline passes or it is cancelled.
// Safe across threads (a concurrent channel, closed once to wake every waiter).
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/experimental/concurrent_channel.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <chrono>
#include <mutex>
#include <optional>

#include "upstream/mcp_client.hpp"

namespace sandgate::upstream {

class Flight {
 public:
  explicit Flight(boost::asio::any_io_executor executor)
      : executor_(executor), done_(executor, 1) {}

  // Wakes every waiter, now and later; `error` is what the operation failed with, if it did.
  void finish(std::optional<UpstreamError> error) {
    {
      std::lock_guard lock(mutex_);
      error_ = std::move(error);
    }
    done_.close();
  }
  std::optional<UpstreamError> error() const {
    std::lock_guard lock(mutex_);
    return error_;
  }

  // True once the operation ended; false when the deadline passed first or the waiter was
  // cancelled (the caller tells which).
  boost::asio::awaitable<bool> wait(std::chrono::steady_clock::time_point deadline) {
    using namespace boost::asio::experimental::awaitable_operators;
    constexpr auto tuple = boost::asio::as_tuple(boost::asio::use_awaitable);
    boost::asio::steady_timer timer(executor_, deadline);
    auto raced = co_await (done_.async_receive(tuple) || timer.async_wait(tuple));
    if (raced.index() == 1) co_return false;
    auto [ec] = std::get<0>(raced);
    co_return ec == boost::asio::experimental::error::channel_closed;
  }

 private:
  boost::asio::any_io_executor executor_;
  boost::asio::experimental::concurrent_channel<void(boost::system::error_code)> done_;
  mutable std::mutex mutex_;
  std::optional<UpstreamError> error_;
};

}  // namespace sandgate::upstream
