#pragma once
// Runs a coroutine to completion on an io_context driven by the calling thread.
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>

namespace sandgate::bench {

template <class T>
T await(boost::asio::io_context& io, boost::asio::awaitable<T> task) {
  auto done = boost::asio::co_spawn(io, std::move(task), boost::asio::use_future);
  io.restart();
  while (done.wait_for(std::chrono::seconds(0)) != std::future_status::ready) io.run_one();
  return done.get();
}

}  // namespace sandgate::bench
