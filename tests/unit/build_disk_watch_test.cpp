// The bound on what an environment's setup writes while it runs (environment/build_disk_watch,
// issue #43): a directory's use measured without following links, and the watch that calls its
// owner once the bound is passed — and never when it is not.
#include "environment/build_disk_watch.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <future>

using namespace sandgate::environment;
namespace fs = std::filesystem;

namespace {

struct TempDir {
  fs::path path = fs::temp_directory_path() /
                  ("sandgate-disk-watch-" + std::to_string(::getpid()) + "-" + std::to_string(++n));
  TempDir() { fs::create_directories(path); }
  ~TempDir() { fs::remove_all(path); }
  static inline int n = 0;
};

void write_bytes(const fs::path& file, std::size_t bytes) {
  std::ofstream out(file, std::ios::binary);
  std::string chunk(bytes, 'x');
  out << chunk;
}

}  // namespace

TEST_CASE("a directory's use: files' sizes, sparse ones by their size, links not followed",
          "[unit][environments]") {
  TempDir dir, elsewhere;
  fs::create_directories(dir.path / "a" / "b");
  write_bytes(dir.path / "a" / "b" / "one", 100'000);
  write_bytes(elsewhere.path / "big", 1'000'000);
  fs::create_symlink(elsewhere.path, dir.path / "link");
  auto use = directory_use(dir.path, 1ull << 40, 1'000'000);
  CHECK(use.bytes >= 100'000);
  CHECK(use.bytes < 1'000'000);  // the link's target is not counted
  CHECK(use.entries == 4);       // a, a/b, a/b/one, link
  // A sparse file takes no disk, but its size is what the seal bounds.
  std::ofstream(dir.path / "sparse").close();
  REQUIRE(::truncate((dir.path / "sparse").c_str(), 1ll << 30) == 0);
  CHECK(directory_use(dir.path, 1ull << 40, 1'000'000).bytes >= (1ull << 30));
  // Past a bound the walk stops counting.
  CHECK(directory_use(dir.path, 1000, 1'000'000).bytes > 1000);
  CHECK(directory_use(dir.path, 1ull << 40, 2).entries == 3);
}

TEST_CASE("the watch calls its owner once the directory passes its bound, and only then",
          "[unit][environments]") {
  TempDir dir;
  std::promise<std::string> told;
  BuildDiskWatch watch(
      dir.path, 1 << 20, [&](std::string why) { told.set_value(why); },
      std::chrono::milliseconds(20));
  write_bytes(dir.path / "small", 1000);
  auto future = told.get_future();
  CHECK(future.wait_for(std::chrono::milliseconds(200)) == std::future_status::timeout);
  CHECK(watch.tripped().empty());
  write_bytes(dir.path / "large", 2 << 20);
  REQUIRE(future.wait_for(std::chrono::seconds(10)) == std::future_status::ready);
  auto why = future.get();
  CHECK(why.find("max_size_mb (1 MiB)") != std::string::npos);
  CHECK(watch.tripped() == why);
}

TEST_CASE("a watch that never tripped stops at once when its build ends", "[unit][environments]") {
  TempDir dir;
  bool called = false;
  {
    BuildDiskWatch watch(dir.path, 1 << 20, [&](std::string) { called = true; });
  }
  CHECK_FALSE(called);
}
