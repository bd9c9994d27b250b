#include "session/registry.hpp"

#include <boost/asio/io_context.hpp>
#include <catch2/catch.hpp>
#include <thread>

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
