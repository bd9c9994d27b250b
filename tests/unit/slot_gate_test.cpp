// upstream/slot_gate: an upstream's calls in flight and each tenant's share of them (issue #45).
#include "upstream/slot_gate.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>
#include <catch2/catch.hpp>
#include <chrono>
#include <memory>
#include <vector>

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

TEST_CASE("a tenant's share shrinks while others are active: two busy tenants never hold it all",
          "[unit][upstream]") {
  boost::asio::io_context io;
  // Six places, at most four each (the fixed share): alone, a tenant may take four.
  auto gate = std::make_shared<SlotGate>(6, 4);
  CHECK(gate->share_for("a") == 4);
  std::vector<SlotGate::Slot> a, b;
  for (int i = 0; i < 3; ++i) a.push_back(take(io, gate, "a", std::chrono::milliseconds(0)));
  // With a holding, b's part is half the capacity: three.
  CHECK(gate->share_for("b") == 3);
  for (int i = 0; i < 3; ++i) b.push_back(take(io, gate, "b", std::chrono::milliseconds(0)));
  for (const auto& slot : a) CHECK(slot);
  for (const auto& slot : b) CHECK(slot);
  // c waits; while it does, the parts are two each, so the place a gives back is c's, not a's.
  auto c = boost::asio::co_spawn(io, gate->acquire("c", Clock::now() + std::chrono::seconds(30)),
                                 boost::asio::use_future);
  io.restart();
  io.run_for(std::chrono::milliseconds(20));
  REQUIRE(c.wait_for(std::chrono::seconds(0)) != std::future_status::ready);
  CHECK(gate->share_for("a") == 2);
  a.pop_back();  // a holds two now: its part
  CHECK_FALSE(take(io, gate, "a", std::chrono::milliseconds(0)));
  while (c.wait_for(std::chrono::seconds(0)) != std::future_status::ready) io.run_one();
  auto cs = c.get();
  CHECK(cs);
  // b, over its part, keeps what it holds but takes no more; once c is gone, parts grow back.
  CHECK(gate->held() == 6);
  a.clear();
  CHECK_FALSE(take(io, gate, "b", std::chrono::milliseconds(0)));  // b holds 3, its part is 2
  { auto gone = std::move(cs); }
  CHECK(gate->share_for("b") == 4);  // b alone: its fixed share
  CHECK(take(io, gate, "b", std::chrono::milliseconds(0)));
}

TEST_CASE("a waiter whose deadline passed no longer counts as active", "[unit][upstream]") {
  boost::asio::io_context io;
  auto gate = std::make_shared<SlotGate>(2, 2);
  auto a1 = take(io, gate, "a", std::chrono::milliseconds(0));
  auto a2 = take(io, gate, "a", std::chrono::milliseconds(0));
  CHECK_FALSE(take(io, gate, "b", std::chrono::milliseconds(60)));
  CHECK(gate->share_for("a") == 2);
}
