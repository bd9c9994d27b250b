// The registry file a restarted gateway reads back: a round trip keeps every field, and
// anything torn, foreign, too deep, too large or wrong field by field is refused (the whole
// file, or the one entry), never trusted and never a crash. Then the registry's own save and
// restore, and the archive store taking over what a previous gateway left.
#include "session/saved_sessions.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <catch2/catch.hpp>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>

#include "session/registry.hpp"
#include "session/session_id.hpp"
#include "session/state_store.hpp"

using namespace sandgate;
using session::SavedRegistry;
using session::SavedSandbox;
using session::SavedSession;
using session::SessionKind;

namespace {

struct TempDir {
  std::filesystem::path path =
      std::filesystem::temp_directory_path() / ("sandgate-saved-" + std::to_string(::getpid()));
  TempDir() { std::filesystem::create_directories(path); }
  ~TempDir() { std::filesystem::remove_all(path); }
};

SavedRegistry sample(const std::string& replica = "r1") {
  SavedRegistry r;
  r.replica = replica;
  r.sessions.push_back({session::new_session_id(replica), SessionKind::session, "alpha",
                        1'700'000'000'000, 1'700'000'100'000, 0.125, SavedSandbox::hibernated, ""});
  r.sessions.push_back({session::new_handle_id(replica), SessionKind::handle, "beta",
                        1'700'000'000'001, 1'700'000'000'002, 0.0, SavedSandbox::live, ""});
  r.sessions.push_back({session::new_session_id(replica), SessionKind::session, "alpha", 5, 6, 1e-7,
                        SavedSandbox::none, ""});
  return r;
}

// The sample's text with one entry's field replaced.
std::string with_field(const SavedRegistry& r, std::size_t entry, const std::string& key,
                       const nlohmann::json& value) {
  auto doc = nlohmann::json::parse(session::serialize(r));
  doc["sessions"][entry][key] = value;
  return doc.dump();
}

int mode_of(const std::filesystem::path& p) {
  struct stat st {};
  return ::lstat(p.c_str(), &st) == 0 ? static_cast<int>(st.st_mode & 07777) : -1;
}

}  // namespace

namespace {
// A tenant's terms as auth would hand them down.
sandgate::tenant::Terms terms_of(const std::string& name, std::uint32_t max_sessions = 5'000) {
  auto t = std::make_shared<sandgate::tenant::TenantTerms>();
  t->name = name;
  t->max_sessions = max_sessions;
  return t;
}
}  // namespace

TEST_CASE("a saved registry reads back exactly as written", "[unit][restart]") {
  for (std::string replica : {"r1", ""}) {
    auto r = sample(replica);
    auto parsed = session::parse_saved_registry(session::serialize(r));
    REQUIRE(parsed.registry);
    CHECK(parsed.skipped == 0);
    CHECK(*parsed.registry == r);
  }
  // A tenant name that is not UTF-8 (the tokens file takes any word) is written, not thrown on.
  auto odd = sample();
  odd.sessions[0].tenant = "caf\xff\"\\";
  auto back = session::parse_saved_registry(session::serialize(odd));
  REQUIRE(back.registry);
  CHECK(back.registry->sessions.size() == 3);
  // Fields a later version may add are ignored.
  auto r = sample();
  auto parsed = session::parse_saved_registry(with_field(r, 0, "future_field", {1, 2}));
  REQUIRE(parsed.registry);
  CHECK(*parsed.registry == r);
}

TEST_CASE("a torn, foreign, deep or huge registry file is ignored as a whole", "[unit][restart]") {
  std::string good = session::serialize(sample());
  std::vector<std::string> bad = {
      "",
      "garbage",
      "\x1f\x8b\x08\x00 binary",
      good.substr(0, good.size() / 2),  // torn
      good.substr(0, good.size() - 3),
      "[]",
      "null",
      R"({"format":"something-else","version":1,"replica":"r1","sessions":[]})",
      R"({"format":"sandgate-sessions","version":2,"replica":"r1","sessions":[]})",
      R"({"format":"sandgate-sessions","version":"1","replica":"r1","sessions":[]})",
      R"({"format":"sandgate-sessions","version":1,"replica":"Not A Name","sessions":[]})",
      R"({"format":"sandgate-sessions","version":1,"replica":"r1","sessions":{}})",
      R"({"format":"sandgate-sessions","version":1,"replica":"r1"})",
      R"({"format":"sandgate-sessions","version":1,"replica":"r1","sessions":[{"x":[[]]}]})",
      std::string(200'000, '[') + std::string(200'000, ']'),
      good + "trailing",
  };
  for (const auto& text : bad) {
    auto parsed = session::parse_saved_registry(text);
    CHECK_FALSE(parsed.registry);
    CHECK_FALSE(parsed.problem.empty());
  }
  std::string huge = good;
  huge.insert(huge.size() - 3, std::string(session::kMaxSavedBytes, ' '));
  auto parsed = session::parse_saved_registry(huge);
  CHECK_FALSE(parsed.registry);
  CHECK_THAT(parsed.problem, Catch::Contains("larger"));
}

TEST_CASE("each saved entry is checked, and a bad one is skipped", "[unit][restart]") {
  auto r = sample();
  const std::string other_replica_id = session::new_session_id("r2");
  struct Case {
    std::string key;
    nlohmann::json value;
  };
  std::vector<Case> cases = {
      {"id", "../../etc/passwd"},
      {"id", other_replica_id},              // another replica's session
      {"id", session::new_handle_id("r1")},  // a handle where a session id belongs
      {"id", 42},
      {"kind", "task"},
      {"tenant", ""},
      {"tenant", "two words"},
      {"tenant", std::string(300, 't')},
      {"tenant", nullptr},
      {"created_unix_ms", -1},
      {"created_unix_ms", 1.5},
      // Beyond what the gateway's nanosecond clocks hold (they end in 2262): converting it
      // would overflow.
      {"created_unix_ms", std::numeric_limits<std::int64_t>::max()},
      {"last_used_unix_ms", 9'300'000'000'000},
      {"last_used_unix_ms", "soon"},
      {"spend_usd", -0.01},
      {"spend_usd", 1e300},
      {"spend_usd", "1"},
      {"sandbox", "frozen"},
  };
  for (const auto& c : cases) {
    INFO(c.key << " = " << c.value.dump());
    auto parsed = session::parse_saved_registry(with_field(r, 0, c.key, c.value));
    REQUIRE(parsed.registry);
    CHECK(parsed.skipped == 1);
    CHECK_FALSE(parsed.problem.empty());
    REQUIRE(parsed.registry->sessions.size() == 2);
    CHECK(parsed.registry->sessions[0] == r.sessions[1]);
  }
  // An entry that is no object, and an id that appears twice.
  auto doc = nlohmann::json::parse(session::serialize(r));
  doc["sessions"].push_back("not an entry");
  doc["sessions"].push_back(doc["sessions"][0]);
  auto parsed = session::parse_saved_registry(doc.dump());
  REQUIRE(parsed.registry);
  CHECK(parsed.skipped == 2);
  CHECK(parsed.registry->sessions.size() == 3);
}

TEST_CASE("the registry file is written private and whole, and read only when it is ours",
          "[unit][restart]") {
  TempDir t;
  auto file = t.path / session::kSavedSessionsFile;
  CHECK(session::read_saved_registry(t.path.string()).absent);
  std::string error;
  std::string text = session::serialize(sample());
  REQUIRE(session::write_saved_registry(t.path.string(), text, error));
  CHECK(mode_of(file) == 0600);
  CHECK_FALSE(std::filesystem::exists(t.path / "sessions.json.tmp"));
  auto read = session::read_saved_registry(t.path.string());
  REQUIRE(read.text);
  CHECK(*read.text == text);
  // Replaced whole.
  REQUIRE(session::write_saved_registry(t.path.string(), "second", error));
  CHECK(session::read_saved_registry(t.path.string()).text == "second");

  ::chmod(file.c_str(), 0644);
  read = session::read_saved_registry(t.path.string());
  CHECK_FALSE(read.text);
  CHECK_FALSE(read.absent);
  CHECK_THAT(read.problem, Catch::Contains("0600"));

  std::filesystem::remove(file);
  std::ofstream(t.path / "elsewhere") << text;
  std::filesystem::create_symlink(t.path / "elsewhere", file);
  read = session::read_saved_registry(t.path.string());
  CHECK_FALSE(read.text);
  CHECK_FALSE(read.absent);

  std::filesystem::remove(file);
  std::filesystem::create_directory(file);
  CHECK_FALSE(session::write_saved_registry(t.path.string(), text, error));
  CHECK_FALSE(error.empty());
}

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

TEST_CASE("a saved session keeps its environment, and a malformed one is refused",
          "[unit][restart][environments]") {
  auto r = sample();
  r.sessions[0].environment = "analysis";
  auto parsed = session::parse_saved_registry(session::serialize(r));
  REQUIRE(parsed.registry);
  CHECK(parsed.registry->sessions[0].environment == "analysis");
  CHECK(parsed.registry->sessions[1].environment.empty());
  // A registry written before environments (no field) reads as "not decided yet".
  CHECK(*parsed.registry == r);
  for (nlohmann::json bad : {nlohmann::json(""), nlohmann::json(7), nlohmann::json("Not/A/Name"),
                             nlohmann::json(std::string(64, 'a'))}) {
    auto refused = session::parse_saved_registry(with_field(sample(), 0, "environment", bad));
    REQUIRE(refused.registry);
    CHECK(refused.skipped == 1);
    CHECK(refused.problem == "an entry has no valid environment");
  }
}
