// The supervisor's copy of a call's code never follows or reuses what a program planted at its
// name (a program shares the supervisor's uid in unprivileged mode).
#include "sandbox/inside/code_file.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "sandbox/file_util.hpp"
#include "common/unique_fd.hpp"

namespace fs = std::filesystem;
using sandgate::sandbox::read_file;
using sandgate::UniqueFd;

namespace {

UniqueFd memfd_with(const std::string& text) {
  UniqueFd fd(::memfd_create("code", MFD_CLOEXEC));
  REQUIRE(fd);
  REQUIRE(::write(fd.get(), text.data(), text.size()) == static_cast<ssize_t>(text.size()));
  return fd;
}

struct TempDir {
  fs::path path = fs::temp_directory_path() / ("sandgate-code-" + std::to_string(::getpid()));
  TempDir() { fs::create_directories(path); }
  ~TempDir() { fs::remove_all(path); }
};

}  // namespace

TEST_CASE("code is written into a fresh file, never through a planted symlink or link",
          "[sandbox][code]") {
  TempDir dir;
  auto victim = dir.path / "victim";
  std::ofstream(victim) << "precious";
  auto cell = dir.path / "cell-2.py";

  fs::create_symlink(victim, cell);
  auto first = memfd_with("print(1)\n");
  CHECK(sandgate::sandbox::write_code_file(first.get(), cell) == 0);
  CHECK(read_file(victim) == "precious");
  CHECK_FALSE(fs::is_symlink(cell));
  CHECK(read_file(cell) == "print(1)\n");

  // A hard link to another file is replaced too, not written through.
  fs::remove(cell);
  fs::create_hard_link(victim, cell);
  auto second = memfd_with("print(2)\n");
  CHECK(sandgate::sandbox::write_code_file(second.get(), cell) == 0);
  CHECK(read_file(victim) == "precious");
  CHECK(read_file(cell) == "print(2)\n");
}
