#include "session/registry.hpp"

#include <array>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>
#include <catch2/catch.hpp>
#include <set>
#include <thread>

#include "session/session_id.hpp"

using namespace sandgate;

TEST_CASE("the registry enforces session limits and tenant ownership", "[unit][registry]") {
  boost::asio::io_context io;
  sandbox::SandboxHost host(io.get_executor(), {});
  session::AsyncSemaphore slots(1, 1);
  session::RegistryConfig cfg;
  cfg.max_sessions = 3;
  cfg.max_sessions_per_tenant = 2;
  cfg.idle_timeout = std::chrono::seconds(1);
  session::Registry registry(io.get_executor(), cfg, host, slots);

  auto a1 = std::get<std::shared_ptr<session::Session>>(registry.create({"a", {}, {}}));
  registry.create({"a", {}, {}});
  CHECK(std::get<session::CreateRefusal>(registry.create({"a", {}, {}})) ==
        session::CreateRefusal::too_many_for_tenant);
  // A tenant override raises its own limit, but not the overall one.
  registry.create({"b", 5, {}});
  CHECK(std::get<session::CreateRefusal>(registry.create({"b", 5, {}})) ==
        session::CreateRefusal::too_many_sessions);

  CHECK(registry.find(a1->id(), "a") == a1);
  CHECK(registry.find(a1->id(), "b") == nullptr);
  CHECK_FALSE(registry.remove(a1->id(), "b"));
  CHECK(registry.remove(a1->id(), "a"));
  CHECK(a1->ended());
  CHECK(registry.find(a1->id(), "a") == nullptr);

  SECTION("idle sessions expire") {
    std::this_thread::sleep_for(std::chrono::milliseconds(1100));
    CHECK(registry.sweep_idle() == 2);
    CHECK(registry.size() == 0);
  }
  registry.end_all();
  host.shutdown();
  io.run_for(std::chrono::milliseconds(50));
}

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

TEST_CASE("session ids are unguessable: 128 random bits, never repeated", "[unit][registry]") {
  std::set<std::string> seen;
  std::array<int, 16> digit_counts{};
  for (int i = 0; i < 20000; ++i) {
    auto id = sandgate::session::new_session_id();
    REQUIRE(id.size() == 32);
    REQUIRE(sandgate::session::looks_like_session_id(id));
    for (char c : id) digit_counts[c <= '9' ? c - '0' : c - 'a' + 10]++;
    seen.insert(std::move(id));
  }
  CHECK(seen.size() == 20000);
  // 640,000 hex digits: each of the 16 values appears 40,000 times give or take a few hundred
  // (a broken generator — constant, counter, low entropy — is far outside this).
  for (int count : digit_counts) {
    CHECK(count > 38000);
    CHECK(count < 42000);
  }
}

TEST_CASE("the logged session prefix tells sessions apart, with or without a replica name",
          "[unit][registry]") {
  using sandgate::session::log_prefix;
  using sandgate::session::new_session_id;
  auto a = new_session_id("sandgate-0"), b = new_session_id("sandgate-0");
  CHECK(log_prefix(a).size() == 8);
  CHECK(log_prefix(a) == a.substr(std::string("sandgate-0.").size(), 8));
  CHECK(log_prefix(a) != log_prefix(b));
  auto plain = new_session_id();
  CHECK(log_prefix(plain) == plain.substr(0, 8));
}
