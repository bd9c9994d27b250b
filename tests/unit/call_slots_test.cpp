// The gateway's call slots (session/call_slots): a freed slot goes to the waiting tenant running
// fewest calls.
#include "session/call_slots.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <catch2/catch.hpp>
#include <map>
#include <string>
#include <vector>

using namespace sandgate;

TEST_CASE("call slots hand a freed slot to the waiting tenant running fewest calls",
          "[unit][registry][fair]") {
  boost::asio::io_context io;
  session::CallSlots slots(2, 4);
  std::vector<std::string> order;
  std::map<std::string, std::vector<session::CallSlots::Permit>> held;
  auto take = [&](std::string tenant, std::string label) -> boost::asio::awaitable<void> {
    auto p = co_await slots.acquire(tenant, 2);
    order.push_back(p ? label : "busy:" + label);
    if (p) held[tenant].push_back(std::move(p));
  };
  auto settle = [&] {
    io.restart();
    for (int i = 0; i < 10; ++i) io.poll();
  };
  auto spawn = [&](std::string tenant, std::string label) {
    boost::asio::co_spawn(io, take(tenant, label), boost::asio::detached);
    settle();
  };
  spawn("a", "a1");
  spawn("a", "a2");
  spawn("a", "a3");  // waits: both slots are alpha's
  spawn("b", "b1");  // waits
  CHECK(order == std::vector<std::string>{"a1", "a2"});
  CHECK(slots.waiting() == 2);
  held["a"].pop_back();  // a slot frees: b runs nothing, so b1 goes before a3
  settle();
  CHECK(order == std::vector<std::string>{"a1", "a2", "b1"});
  held["a"].pop_back();
  settle();
  CHECK(order == std::vector<std::string>{"a1", "a2", "b1", "a3"});
  CHECK(slots.running("a") == 1);
  CHECK(slots.running("b") == 1);
  held.clear();
  settle();
  CHECK(slots.running("a") == 0);
}
