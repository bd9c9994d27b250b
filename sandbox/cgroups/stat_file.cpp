#include "stat_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <array>

namespace sandgate::sandbox {

std::optional<std::string> StatFile::read() const {
  if (path_.empty()) return std::nullopt;
  // A file that cannot be opened for writing (a read-only memory.peak before Linux 6.12) is
  // still read; write() then fails.
  if (!fd_ && writable_) fd_.reset(::open(path_.c_str(), O_RDWR | O_CLOEXEC));
  if (!fd_) fd_.reset(::open(path_.c_str(), O_RDONLY | O_CLOEXEC));
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
