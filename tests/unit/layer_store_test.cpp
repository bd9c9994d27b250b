// The layer store (environment/layer_store.cpp): a build's directory sealed (the gateway's, no
// set-id bits, nothing but files, directories and links, its size bounded), committed under its
// hash with a record, found again, failures recorded, and unused layers removed.
#include "environment/layer_store.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

using namespace sandgate::environment;
namespace fs = std::filesystem;

namespace {

struct TempDir {
  fs::path path = fs::temp_directory_path() / ("sandgate-layers-" + std::to_string(::getpid()));
  TempDir() { fs::remove_all(path); }
  ~TempDir() { fs::remove_all(path); }
};

const std::string kHash(64, 'a');
const std::string kOther(64, 'b');

void write(const fs::path& path, const std::string& text, mode_t mode) {
  fs::create_directories(path.parent_path());
  std::ofstream(path) << text;
  ::chmod(path.c_str(), mode);
}

}  // namespace

TEST_CASE("a sealed build becomes a layer found by its hash, with no set-id bits",
          "[unit][environments]") {
  TempDir dir;
  LayerStore store(dir.path.string());
  store.prepare();
  std::string build = store.begin_build(kHash);
  write(fs::path(build) / "python" / "mod.py", "X = 1\n", 06755);
  write(fs::path(build) / "bin" / "tool", "#!/bin/sh\n", 0700);
  write(fs::path(build) / "private.txt", "secret\n", 0600);
  ::mkfifo((fs::path(build) / "fifo").c_str(), 0666);
  fs::create_symlink("/etc/shadow", fs::path(build) / "link");
  auto size = store.seal(build, 1 << 20);
  CHECK(size == 6 + 10 + 7);
  struct stat st {};
  REQUIRE(::stat((fs::path(build) / "python" / "mod.py").c_str(), &st) == 0);
  CHECK((st.st_mode & 07777) == 0755);  // set-id bits gone, readable, no write for others
  REQUIRE(::stat((fs::path(build) / "bin" / "tool").c_str(), &st) == 0);
  CHECK((st.st_mode & 07777) == 0755);  // executable by the programs
  REQUIRE(::stat((fs::path(build) / "private.txt").c_str(), &st) == 0);
  CHECK((st.st_mode & 07777) == 0644);  // readable by the programs' uid
  CHECK(!fs::exists(fs::path(build) / "fifo"));
  CHECK(fs::is_symlink(fs::path(build) / "link"));  // kept, never followed
  CHECK(fs::read_symlink(fs::path(build) / "link") == "/etc/shadow");

  CHECK(!store.find(kHash));
  auto layer = store.commit(build, kHash, "analysis", size);
  CHECK(layer.hash == kHash);
  CHECK(layer.name == "analysis");
  CHECK(layer.size_bytes == size);
  CHECK(fs::exists(fs::path(layer.dir) / "python" / "mod.py"));
  CHECK(!fs::exists(build));
  auto found = store.find(kHash);
  REQUIRE(found);
  CHECK(found->dir == layer.dir);
  CHECK(!store.find(kOther));
  CHECK(!store.find("../../etc"));
}

TEST_CASE("a layer larger than its limit is refused", "[unit][environments]") {
  TempDir dir;
  LayerStore store(dir.path.string());
  store.prepare();
  std::string build = store.begin_build(kHash);
  write(fs::path(build) / "big", std::string(4096, 'x'), 0644);
  CHECK_THROWS_WITH(store.seal(build, 1000), Catch::Contains("larger than its max_size_mb"));
}

TEST_CASE("a failure is recorded, cleared by a later build, and unused layers go",
          "[unit][environments]") {
  TempDir dir;
  LayerStore store(dir.path.string());
  store.prepare();
  store.record_failure(kHash, {"analysis", "the verify exited with status 3", "out\xff"});
  auto failure = store.failure(kHash);
  REQUIRE(failure);
  CHECK(failure->reason == "the verify exited with status 3");
  CHECK(failure->name == "analysis");

  std::string build = store.begin_build(kHash);
  auto layer = store.commit(build, kHash, "analysis", store.seal(build, 1 << 20));
  CHECK(!store.failure(kHash));
  std::string other_build = store.begin_build(kOther);
  auto other = store.commit(other_build, kOther, "old", store.seal(other_build, 1 << 20));

  // In use by a live sandbox: kept although no definition wants it.
  CHECK(store.remove_unused({kHash}, {other.dir}).empty());
  CHECK(store.find(kOther));
  CHECK(store.remove_unused({kHash}, {}) == std::vector<std::string>{kOther});
  CHECK(!store.find(kOther));
  CHECK(store.find(kHash));

  // A build a crashed gateway left, and a layer without its record, are gone after prepare().
  std::string left = store.begin_build(kOther);
  fs::remove(fs::path(layer.dir).string() + ".json");
  store.prepare();
  CHECK(!fs::exists(left));
  CHECK(!store.find(kHash));
  CHECK(!fs::exists(layer.dir));
}

TEST_CASE("layers built ahead are found read-only beside the store's own", "[unit][environments]") {
  TempDir dir;
  LayerStore ahead((dir.path / "ahead").string());
  ahead.prepare();
  std::string build = ahead.begin_build(kHash);
  ahead.commit(build, kHash, "analysis", ahead.seal(build, 1 << 20));
  LayerStore store((dir.path / "own").string(), {(dir.path / "ahead").string()});
  store.prepare();
  auto found = store.find(kHash);
  REQUIRE(found);
  CHECK(found->dir.find("/ahead/") != std::string::npos);
  // Never removed from there.
  CHECK(store.remove_unused({}, {}).empty());
  CHECK(store.find(kHash));
}
