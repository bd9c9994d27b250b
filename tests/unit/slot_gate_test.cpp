// upstream/slot_gate: an upstream's calls in flight and each tenant's share of them (issue #45).
#include "upstream/slot_gate.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>
#include <catch2/catch.hpp>
#include <chrono>
#include <memory>

using sandgate::upstream::SlotGate;
using Clock = std::chrono::steady_clock;

namespace {

SlotGate::Slot take(boost::asio::io_context& io, const std::shared_ptr<SlotGate>& gate,
                    const std::string& key, std::chrono::milliseconds wait) {
  auto future =
      boost::asio::co_spawn(io, gate->acquire(key, Clock::now() + wait), boost::asio::use_future);
  io.restart();
  while (future.wait_for(std::chrono::seconds(0)) != std::future_status::ready) io.run_one();
  return future.get();
}

}  // namespace

TEST_CASE("a tenant holds at most its share, and all tenants at most the capacity",
          "[unit][upstream]") {
  boost::asio::io_context io;
  auto gate = std::make_shared<SlotGate>(3, 2);
  auto a1 = take(io, gate, "a", std::chrono::milliseconds(0));
  auto a2 = take(io, gate, "a", std::chrono::milliseconds(0));
  CHECK(a1);
  CHECK(a2);
  CHECK_FALSE(take(io, gate, "a", std::chrono::milliseconds(60)));  // a's share is 2
  auto b1 = take(io, gate, "b", std::chrono::milliseconds(0));
  CHECK(b1);
  CHECK_FALSE(take(io, gate, "c", std::chrono::milliseconds(60)));  // the capacity is 3
  CHECK(gate->held() == 3);
  { auto gone = std::move(a1); }  // a place given back
  CHECK(gate->held() == 2);
  CHECK(take(io, gate, "c", std::chrono::milliseconds(0)));
}

TEST_CASE("a waiter gets the place a release frees, before its deadline", "[unit][upstream]") {
  boost::asio::io_context io;
  auto gate = std::make_shared<SlotGate>(1, 1);
  auto held = std::make_unique<SlotGate::Slot>(take(io, gate, "a", std::chrono::milliseconds(0)));
  REQUIRE(*held);
  auto waiting = boost::asio::co_spawn(
      io, gate->acquire("b", Clock::now() + std::chrono::seconds(30)), boost::asio::use_future);
  io.restart();
  io.run_for(std::chrono::milliseconds(20));
  CHECK(waiting.wait_for(std::chrono::seconds(0)) != std::future_status::ready);
  held.reset();
  while (waiting.wait_for(std::chrono::seconds(0)) != std::future_status::ready) io.run_one();
  CHECK(waiting.get());  // a place, not the empty slot of a deadline passed
}
