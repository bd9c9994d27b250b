// The registry's own restart (session/registry_restart): restored sessions served with their
// tenant, age and spend, no more of them than the caps allow, and the archive store taking over
// what a previous gateway left.
#include <boost/asio/io_context.hpp>
#include <catch2/catch.hpp>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "saved_registry_sample.hpp"
#include "session/registry.hpp"
#include "session/saved_sessions.hpp"
#include "session/session_id.hpp"
#include "session/state_store.hpp"

using namespace sandgate;
using session::SavedRegistry;
using session::SavedSandbox;
using session::SessionKind;
using test::sample;
using test::TempDir;

namespace {
// A tenant's terms as auth would hand them down.
sandgate::tenant::Terms terms_of(const std::string& name, std::uint32_t max_sessions = 5'000) {
  auto t = std::make_shared<sandgate::tenant::TenantTerms>();
  t->name = name;
  t->max_sessions = max_sessions;
  return t;
}
}  // namespace

TEST_CASE("a restored registry serves its sessions with their tenant, age and spend",
          "[unit][restart]") {
  boost::asio::io_context io;
  sandbox::SandboxHost host(io.get_executor(), {});
  session::CallSlots slots(4, 4);
  session::RegistryConfig cfg;
  cfg.replica_name = "r1";
  cfg.idle_timeout = std::chrono::seconds(600);
  auto saved = sample();
  auto now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                    std::chrono::system_clock::now().time_since_epoch())
                    .count();
  saved.sessions[0].created_unix_ms = now_ms - 100'000;  // 100 s old
  saved.sessions[0].last_used_unix_ms = now_ms - 5'000;
  saved.sessions[1].created_unix_ms = saved.sessions[1].last_used_unix_ms = now_ms - 1'000;
  saved.sessions[2].created_unix_ms = saved.sessions[2].last_used_unix_ms =
      now_ms - 3'600'000;  // idle for an hour: past the idle timeout
  {
    session::Registry registry(io.get_executor(), cfg, host, slots);
    auto report = registry.restore(
        saved, [](const std::string& t) { return t == "alpha" ? terms_of(t) : nullptr; });
    CHECK(report.ids == std::vector<std::string>{saved.sessions[0].id});
    CHECK(report.unknown_tenant == 1);  // beta is gone from the tokens file
    CHECK(report.expired == 1);
    auto s = registry.find(saved.sessions[0].id, "alpha");
    REQUIRE(s);
    CHECK(registry.find(saved.sessions[0].id, "beta") == nullptr);
    CHECK(s->spend_usd() == 0.125);
    CHECK(s->hibernated() == false);  // no store here: nothing to resume from
    auto again = registry.save();
    REQUIRE(again.sessions.size() == 1);
    CHECK(again.replica == "r1");
    CHECK(again.sessions[0].spend_usd == 0.125);
    CHECK(std::llabs(again.sessions[0].created_unix_ms - saved.sessions[0].created_unix_ms) < 1000);
    CHECK(std::llabs(again.sessions[0].last_used_unix_ms - saved.sessions[0].last_used_unix_ms) <
          1000);
    // Restoring the same again adds nothing.
    auto twice = registry.restore(saved, [](const std::string& t) { return terms_of(t); });
    CHECK(twice.duplicate == 1);
    registry.release_all("test");
    CHECK(s->ended());
    // Run while the registry lives: its sweep coroutine must never first run after it is gone.
    host.shutdown();
    io.run_for(std::chrono::milliseconds(50));
  }
}

TEST_CASE("a restart brings back no more sessions than the caps allow, the most recently used",
          "[unit][restart]") {
  boost::asio::io_context io;
  sandbox::SandboxHost host(io.get_executor(), {});
  session::CallSlots slots(4, 4);
  session::RegistryConfig cfg;
  cfg.replica_name = "r1";
  cfg.idle_timeout = std::chrono::seconds(600);
  cfg.max_sessions = 3;
  auto now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                    std::chrono::system_clock::now().time_since_epoch())
                    .count();
  SavedRegistry saved;
  saved.replica = "r1";
  // Five of alpha (whose cap is 2 now) and two of beta, used from 10 s to 70 s ago.
  for (int i = 0; i < 7; ++i)
    saved.sessions.push_back({session::new_session_id("r1"), SessionKind::session,
                              i < 5 ? "alpha" : "beta", now_ms - 100'000, now_ms - 10'000 * (i + 1),
                              0.0, SavedSandbox::none, ""});
  {
    session::Registry registry(io.get_executor(), cfg, host, slots);
    auto report = registry.restore(
        saved, [](const std::string& t) { return terms_of(t, t == "alpha" ? 2 : 5'000); });
    // alpha's two most recent, then beta's most recent: the gateway's cap of 3 is reached.
    CHECK(report.ids == std::vector<std::string>{saved.sessions[0].id, saved.sessions[1].id,
                                                 saved.sessions[5].id});
    CHECK(report.over_cap == 4);
    CHECK(registry.size() == 3);
    CHECK(registry.find(saved.sessions[2].id, "alpha") == nullptr);
    CHECK(registry.find(saved.sessions[6].id, "beta") == nullptr);
    registry.release_all("test");
    host.shutdown();
    io.run_for(std::chrono::milliseconds(50));
  }
}

TEST_CASE("after a restart the store keeps the archives of restored sessions only",
          "[unit][restart]") {
  TempDir t;
  std::string error;
  {
    session::StateStore first(t.path.string(), 1 << 20, false, true);
    REQUIRE(first.put("kept", "aaaa", error));
    REQUIRE(first.put("gone", "bbbb", error));
  }
  std::ofstream(t.path / "x.sgz.tmp") << "torn";
  session::StateStore store(t.path.string(), 1 << 20, false, true);
  CHECK_FALSE(std::filesystem::exists(t.path / "x.sgz.tmp"));
  CHECK(store.count() == 0);  // nothing is served before adopt()
  // A link planted where a restored session's archive would be is not taken over.
  std::filesystem::create_symlink("/etc/hostname", t.path / store.file_name("linked"));
  CHECK(store.adopt({"kept", "linked", "never-stored"}) == 1);
  CHECK(store.has("kept"));
  CHECK(store.get("kept") == "aaaa");
  CHECK_FALSE(store.has("gone"));
  CHECK_FALSE(std::filesystem::exists(t.path / store.file_name("gone")));
  CHECK_FALSE(std::filesystem::exists(t.path / store.file_name("linked")));
  CHECK(store.bytes() == 4);
}
