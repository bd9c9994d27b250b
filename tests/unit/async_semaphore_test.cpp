// The gateway's semaphore (session/async_semaphore): FIFO, a bounded queue, and a try that
// never waits or jumps the queue.
#include "session/async_semaphore.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <catch2/catch.hpp>
#include <vector>

using namespace sandgate;

TEST_CASE("the semaphore is FIFO and bounded", "[unit][registry]") {
  boost::asio::io_context io;
  session::AsyncSemaphore sem(1, 2);
  std::vector<int> order;
  std::vector<session::AsyncSemaphore::Permit> held;
  auto take = [&](int n) -> boost::asio::awaitable<void> {
    auto p = co_await sem.acquire();
    if (!p) {
      order.push_back(-n);
      co_return;
    }
    order.push_back(n);
    held.push_back(std::move(p));
  };
  // poll, not run: the waiters keep the context busy on purpose.
  auto settle = [&] {
    io.restart();
    for (int i = 0; i < 10; ++i) io.poll();
  };
  for (int i = 1; i <= 4; ++i) boost::asio::co_spawn(io, take(i), boost::asio::detached);
  settle();
  // 1 runs, 2 and 3 wait, 4 is refused (queue full).
  CHECK(order == std::vector<int>{1, -4});
  held.clear();  // 1 releases -> 2
  settle();
  CHECK(order == std::vector<int>{1, -4, 2});
  held.clear();
  settle();
  CHECK(order == std::vector<int>{1, -4, 2, 3});
}

TEST_CASE("try_acquire takes a free permit and never waits or jumps the queue",
          "[unit][registry]") {
  boost::asio::io_context io;
  session::AsyncSemaphore sem(1, 4);
  auto first = sem.try_acquire();
  REQUIRE(first);
  CHECK_FALSE(sem.try_acquire());  // taken: no, at once
  bool waiter_got = false;
  session::AsyncSemaphore::Permit waiter;
  boost::asio::co_spawn(
      io,
      [&]() -> boost::asio::awaitable<void> {
        waiter = co_await sem.acquire();
        waiter_got = static_cast<bool>(waiter);
      },
      boost::asio::detached);
  io.poll();
  CHECK_FALSE(waiter_got);
  first.reset();  // handed to the waiter, not left for try_acquire
  CHECK_FALSE(sem.try_acquire());
  io.restart();
  io.poll();
  CHECK(waiter_got);
  waiter.reset();
  CHECK(sem.try_acquire());
}
