#pragma once
// A file of one test's own under the temporary directory (a tokens file, a gateway's log),
// removed at the end.
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

namespace sandgate::test {

struct TempFile {
  std::filesystem::path path;
  explicit TempFile(const std::string& name)
      : path(std::filesystem::temp_directory_path() /
             ("sandgate-test-" + std::to_string(::getpid()) + "-" + name)) {}
  ~TempFile() { std::filesystem::remove(path); }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;

  void write(const std::string& text, mode_t mode = 0600) const {
    {
      std::ofstream f(path, std::ios::trunc);
      f << text;
    }
    ::chmod(path.c_str(), mode);
  }
  std::string read() const {
    std::ifstream f(path);
    return std::string((std::istreambuf_iterator<char>(f)), {});
  }
};

}  // namespace sandgate::test
