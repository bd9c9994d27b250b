#include "stat_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <array>

namespace sandgate::sandbox {

std::optional<std::string> StatFile::read() const {
  if (path_.empty()) return std::nullopt;
  if (!fd_) fd_.reset(::open(path_.c_str(), (writable_ ? O_RDWR : O_RDONLY) | O_CLOEXEC));
  if (!fd_) return std::nullopt;
  std::array<char, 4096> buffer;
  ssize_t n = ::pread(fd_.get(), buffer.data(), buffer.size(), 0);
  if (n < 0) {
    fd_.reset();  // opened again next time
    return std::nullopt;
  }
  return std::string(buffer.data(), static_cast<std::size_t>(n));
}

bool StatFile::write(const std::string& text) {
  if (!writable_ || (!fd_ && !read())) return false;
  return ::pwrite(fd_.get(), text.data(), text.size(), 0) == static_cast<ssize_t>(text.size());
}

}  // namespace sandgate::sandbox
