#include "file_util.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <sstream>
#include <system_error>

#include "common/unique_fd.hpp"

namespace sandgate::sandbox {

void write_file(const std::filesystem::path& path, const std::string& content) {
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CLOEXEC));
  if (!fd) throw std::system_error(errno, std::generic_category(), "open " + path.string());
  ssize_t n = ::write(fd.get(), content.data(), content.size());
  if (n != static_cast<ssize_t>(content.size()))
    throw std::system_error(n < 0 ? errno : EIO, std::generic_category(), "write " + path.string());
}

std::optional<std::string> read_file(const std::filesystem::path& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) return std::nullopt;
  std::string out;
  char buf[4096];
  for (;;) {
    ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

std::optional<std::uint64_t> read_keyed_value(const std::filesystem::path& path,
                                              const std::string& key) {
  auto text = read_file(path);
  if (!text) return std::nullopt;
  return keyed_value(*text, key);
}

std::optional<std::uint64_t> keyed_value(const std::string& text, const std::string& key) {
  std::istringstream in(text);
  std::string name;
  std::uint64_t value = 0;
  while (in >> name >> value) {
    if (name == key) return value;
  }
  return std::nullopt;
}

}  // namespace sandgate::sandbox
