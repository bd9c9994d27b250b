// The hibernation archive store: private files named by hash, caps, oldest dropped first, and
// nothing trusted that changed behind its back.
#include "session/state_store.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

using sandgate::session::StateStore;

namespace {

struct TempDir {
  std::filesystem::path path =
      std::filesystem::temp_directory_path() / ("sandgate-store-" + std::to_string(::getpid()));
  ~TempDir() { std::filesystem::remove_all(path); }
};

int mode_of(const std::filesystem::path& p) {
  struct stat st {};
  return ::lstat(p.c_str(), &st) == 0 ? static_cast<int>(st.st_mode & 07777) : -1;
}

}  // namespace

TEST_CASE("archives are private files named by a hash, and removed with their session",
          "[state_store]") {
  TempDir t;
  std::string error;
  {
    StateStore store(t.path.string(), 1 << 20, false);
    CHECK(mode_of(t.path) == 0700);
    REQUIRE(store.put("session-secret-id", std::string("\x1f\x8b\0data", 7), error));
    auto file = t.path / store.file_name("session-secret-id");
    CHECK(file.filename().string().find("secret") == std::string::npos);
    CHECK(mode_of(file) == 0400);  // read-only: a sandbox given it cannot reopen it to write
    CHECK(store.bytes() == 7);
    CHECK(store.get("session-secret-id") == std::string("\x1f\x8b\0data", 7));
    CHECK_FALSE(store.get("another"));
    store.remove("session-secret-id");
    CHECK_FALSE(std::filesystem::exists(file));
    CHECK(store.bytes() == 0);
    REQUIRE(store.put("left", "x", error));
  }
  // A given directory stays; what an earlier gateway left in it is swept at the next start.
  REQUIRE(std::filesystem::exists(t.path));
  StateStore again(t.path.string(), 1 << 20, false);
  CHECK(again.left_over() == 1);
  CHECK(std::filesystem::is_empty(t.path));
}

TEST_CASE("the total cap drops the oldest archives first", "[state_store]") {
  TempDir t;
  StateStore store(t.path.string(), 10, false);
  std::vector<std::string> dropped;
  store.on_drop = [&](const std::string& name, std::uint64_t) { dropped.push_back(name); };
  std::string error;
  REQUIRE(store.put("a", "1234", error));
  REQUIRE(store.put("b", "1234", error));
  REQUIRE(store.put("c", "1234", error));  // 12 > 10: a goes
  CHECK(dropped == std::vector<std::string>{store.file_name("a")});
  CHECK_FALSE(store.get("a"));
  CHECK(store.get("b") == "1234");
  CHECK(store.bytes() == 8);
  CHECK_FALSE(store.put("huge", std::string(11, 'x'), error));
  CHECK_THAT(error, Catch::Contains("--state-max-mb"));
  CHECK(store.count() == 2);
}

TEST_CASE("one tenant's archives never push out those of a tenant holding less", "[state_store]") {
  TempDir t;
  StateStore store(t.path.string(), 10, false);
  std::string error;
  REQUIRE(store.put("b1", "bbbb", error, "beta"));
  REQUIRE(store.put("a1", "aaaa", error, "alpha"));
  // 12 > 10: alpha, which would hold 8, holds the most: its own oldest goes, not beta's older
  // one.
  REQUIRE(store.put("a2", "aaaa", error, "alpha"));
  CHECK_FALSE(store.has("a1"));
  CHECK(store.has("b1"));
  CHECK(store.has("a2"));
  // An archive that fits only by pushing out beta's (alpha would hold 7 against beta's 4) is
  // refused, and drops nothing.
  CHECK_FALSE(store.put("a3", std::string(7, 'a'), error, "alpha"));
  CHECK_THAT(error, Catch::Contains("other tenants"));
  CHECK(store.has("a2"));
  CHECK(store.has("b1"));
  CHECK(store.bytes() == 8);
  // Beta, holding less than alpha even with its new archive, makes room from alpha's oldest.
  REQUIRE(store.put("a3", "aa", error, "alpha"));  // alpha 6, beta 4: full
  REQUIRE(store.put("b2", "b", error, "beta"));    // beta 5 < alpha 6
  CHECK_FALSE(store.has("a2"));
  CHECK(store.has("a3"));
  CHECK(store.has("b1"));
  CHECK(store.has("b2"));
  CHECK(store.bytes() == 7);
}

TEST_CASE("a file changed or replaced behind the store's back is not trusted", "[state_store]") {
  TempDir t;
  StateStore store(t.path.string(), 1 << 20, true);
  std::string error;
  REQUIRE(store.put("s", "archive", error));
  auto file = t.path / store.file_name("s");
  std::ofstream(file, std::ios::app) << "more";
  CHECK_FALSE(store.get("s"));
  // A symlink planted in its place is not followed.
  std::filesystem::remove(file);
  std::filesystem::create_symlink("/etc/hostname", file);
  CHECK_FALSE(store.get("s"));
}

TEST_CASE("a store that made its directory removes it at the end", "[state_store]") {
  TempDir t;
  {
    StateStore store((t.path / "own").string(), 1 << 20, true);
    std::string error;
    REQUIRE(store.put("s", "x", error));
  }
  CHECK_FALSE(std::filesystem::exists(t.path / "own"));
}
