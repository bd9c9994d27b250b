#include "session/registry.hpp"

#include <array>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>
#include <catch2/catch.hpp>
#include <map>
#include <set>
#include <thread>

#include "session/session_id.hpp"

using namespace sandgate;

namespace {
// A tenant's terms as auth would hand them down: `max_sessions` open at once.
tenant::Terms terms(const std::string& name, std::uint32_t max_sessions) {
  auto t = std::make_shared<tenant::TenantTerms>();
  t->name = name;
  t->max_sessions = max_sessions;
  return t;
}
}  // namespace

TEST_CASE("the registry enforces session limits and tenant ownership", "[unit][registry]") {
  boost::asio::io_context io;
  sandbox::SandboxHost host(io.get_executor(), {});
  session::CallSlots slots(1, 1);
  session::RegistryConfig cfg;
  cfg.max_sessions = 3;
  cfg.idle_timeout = std::chrono::seconds(1);
  cfg.at_session_cap = session::AtSessionCap::refuse;
  session::Registry registry(io.get_executor(), cfg, host, slots);

  auto a1 = std::get<std::shared_ptr<session::Session>>(registry.create(terms("a", 2)));
  registry.create(terms("a", 2));
  CHECK(std::get<session::CreateRefusal>(registry.create(terms("a", 2))) ==
        session::CreateRefusal::too_many_for_tenant);
  // A tenant's higher limit raises its own, but not the overall one.
  registry.create(terms("b", 5));
  CHECK(std::get<session::CreateRefusal>(registry.create(terms("b", 5))) ==
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

TEST_CASE("at a cap the registry ends the least recently used session of the right tenant",
          "[unit][registry]") {
  boost::asio::io_context io;
  sandbox::SandboxHost host(io.get_executor(), {});
  session::CallSlots slots(1, 1);
  session::RegistryConfig cfg;
  cfg.max_sessions = 5;
  session::Registry registry(io.get_executor(), cfg, host, slots);
  std::vector<session::Eviction> seen;
  registry.on_eviction([&](const session::Eviction& e) { seen.push_back(e); });
  auto make = [&](const std::string& tenant) {
    return std::get<std::shared_ptr<session::Session>>(registry.create(terms(tenant, 3)));
  };
  auto a1 = make("a"), a2 = make("a"), a3 = make("a"), b1 = make("b");
  a1->touch();  // a2 is now alpha's least recently used

  auto a4 = make("a");
  REQUIRE(seen.size() == 1);
  CHECK(seen[0].id == a2->id());
  CHECK(seen[0].tenant == "a");
  CHECK(seen[0].reason == session::EvictionReason::tenant_cap);
  CHECK(a2->ended());
  CHECK(registry.find(a2->id(), "a") == nullptr);
  auto why = registry.why_ended(a2->id(), "a", session::SessionKind::session);
  REQUIRE(why);
  CHECK(why->find("make room") != std::string::npos);
  CHECK_FALSE(registry.why_ended(a2->id(), "b", session::SessionKind::session));
  CHECK_FALSE(registry.why_ended(a2->id(), "a", session::SessionKind::handle));

  // The gateway's cap: b is under its own, a holds the most and pays with its LRU (a3).
  auto b2 = make("b");
  auto b3 = make("b");
  REQUIRE(seen.size() == 2);
  CHECK(seen[1].id == a3->id());
  CHECK(seen[1].reason == session::EvictionReason::gateway_cap);
  for (const auto& s : {a1, a4, b1, b2, b3}) CHECK_FALSE(s->ended());

  // A session that already ended (its sandbox never started, say) goes before any live one.
  b2->end("test");
  auto b4 = make("b");
  REQUIRE(seen.size() == 3);
  CHECK(seen[2].id == b2->id());
  CHECK_FALSE(b1->ended());
  CHECK(registry.size() == 5);

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

TEST_CASE("fair share: a tenant at its cap waits, freed slots go to the tenant running fewest",
          "[unit][registry][fair]") {
  using Kind = session::FairShare::Admission::Kind;
  session::FairShare share(4, 8);
  // alpha may run 2 at once: its third call waits although two slots are free.
  CHECK(share.arrive("alpha", 2).kind == Kind::run);
  CHECK(share.arrive("alpha", 2).kind == Kind::run);
  auto alpha3 = share.arrive("alpha", 2);
  CHECK(alpha3.kind == Kind::wait);
  CHECK(share.free_slots() == 2);
  // beta is not kept behind alpha's waiting call.
  CHECK(share.arrive("beta", 2).kind == Kind::run);
  CHECK(share.arrive("beta", 2).kind == Kind::run);
  CHECK(share.free_slots() == 0);
  auto beta3 = share.arrive("beta", 2);
  auto gamma1 = share.arrive("gamma", 2);
  REQUIRE(beta3.kind == Kind::wait);
  REQUIRE(gamma1.kind == Kind::wait);
  CHECK(share.waiting() == 3);

  // A slot frees: gamma runs nothing yet, so it goes first, though it came last (FIFO across
  // tenants would have picked alpha's call).
  CHECK(share.finish("alpha") == gamma1.ticket);
  // beta's slot frees: alpha and beta now run one each; alpha started its last call longer ago.
  CHECK(share.finish("beta") == alpha3.ticket);
  CHECK(share.finish("gamma") == beta3.ticket);
  CHECK(share.waiting() == 0);
  CHECK(share.running("alpha") == 2);
  CHECK(share.running("beta") == 2);
  CHECK(share.running("gamma") == 0);
  // Nobody waits: finishing frees the slot.
  CHECK_FALSE(share.finish("alpha").has_value());
  CHECK(share.free_slots() == 1);
  // A tenant that never ran a call cannot give back a slot.
  CHECK_FALSE(share.finish("nobody").has_value());
  CHECK(share.free_slots() == 1);
}

TEST_CASE("fair share: one tenant cannot fill the waiting places", "[unit][registry][fair]") {
  using Kind = session::FairShare::Admission::Kind;
  session::FairShare share(1, 3);
  CHECK(share.arrive("alpha", 1).kind == Kind::run);
  auto a2 = share.arrive("alpha", 1), a3 = share.arrive("alpha", 1), a4 = share.arrive("alpha", 1);
  CHECK(a4.kind == Kind::wait);
  // Full: alone, alpha is refused, as a single FIFO queue would refuse it.
  CHECK(share.arrive("alpha", 1).kind == Kind::refused);
  // beta takes the place of alpha's newest waiting call.
  auto b1 = share.arrive("beta", 1);
  REQUIRE(b1.kind == Kind::wait);
  CHECK(b1.pushed_out == a4.ticket);
  // alpha 2 waiting, beta 1: taking another of alpha's would leave it fewer than beta's.
  CHECK(share.arrive("beta", 1).kind == Kind::refused);
  auto c1 = share.arrive("gamma", 1);
  CHECK(c1.pushed_out == a3.ticket);
  CHECK(share.waiting() == 3);
  // Then, as slots free, each tenant running nothing: alpha started a call most recently, so
  // beta and gamma go first.
  CHECK(share.finish("alpha") == b1.ticket);
  CHECK(share.finish("beta") == c1.ticket);
  CHECK(share.finish("gamma") == a2.ticket);
}

TEST_CASE("fair share: with one tenant whose cap is the pool it is a FIFO semaphore",
          "[unit][registry][fair]") {
  using Kind = session::FairShare::Admission::Kind;
  session::FairShare share(2, 2);
  CHECK(share.arrive("t", 2).kind == Kind::run);
  CHECK(share.arrive("t", 2).kind == Kind::run);
  auto w1 = share.arrive("t", 2), w2 = share.arrive("t", 2);
  CHECK(share.arrive("t", 2).kind == Kind::refused);
  CHECK(share.finish("t") == w1.ticket);
  CHECK(share.finish("t") == w2.ticket);
  CHECK_FALSE(share.finish("t").has_value());
  CHECK_FALSE(share.finish("t").has_value());
  CHECK(share.free_slots() == 2);
  // Nothing waits: a cap of 0 is taken as 1, never as "never runs".
  CHECK(share.arrive("u", 0).kind == Kind::run);
  CHECK(share.arrive("u", 0).kind == Kind::wait);
}

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
