#include "common/durable_file.hpp"

#include <fcntl.h>
#include <sys/sendfile.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "common/unique_fd.hpp"

namespace sandgate {

bool write_all(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n == 0) errno = EIO;
    if (n <= 0) return false;
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

namespace {

// copy_all where sendfile cannot be used (a file system without it): 64 KiB at a time.
bool copy_through_buffer(int source, int fd, std::uint64_t size) {
  char buffer[64 << 10];
  std::uint64_t done = 0;
  while (done < size) {
    ssize_t n = ::pread(source, buffer, std::min<std::uint64_t>(sizeof buffer, size - done),
                        static_cast<off_t>(done));
    if (n < 0 && errno == EINTR) continue;
    if (n == 0) errno = EIO;
    if (n <= 0) return false;
    if (!write_all(fd, std::string_view(buffer, static_cast<std::size_t>(n)))) return false;
    done += static_cast<std::uint64_t>(n);
  }
  return true;
}

}  // namespace

bool copy_all(int source, int fd, std::uint64_t size) {
  off_t offset = 0;
  while (static_cast<std::uint64_t>(offset) < size) {
    // sendfile moves at most 0x7ffff000 bytes per call.
    std::uint64_t chunk = std::min<std::uint64_t>(size - offset, 1u << 30);
    ssize_t n = ::sendfile(fd, source, &offset, chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EINVAL || errno == ENOSYS) && offset == 0)
      return copy_through_buffer(source, fd, size);
    if (n == 0) errno = EIO;
    if (n <= 0) return false;
  }
  return true;
}

bool replace_file_durably(int dir_fd, const std::string& name, const std::string& temp_name,
                          std::string_view bytes) {
  return replace_file_durably_with(dir_fd, name, temp_name,
                                   [bytes](int fd) { return write_all(fd, bytes); });
}

bool replace_file_durably_with(int dir_fd, const std::string& name, const std::string& temp_name,
                               const std::function<bool(int)>& write) {
  ::unlinkat(dir_fd, temp_name.c_str(), 0);  // a crash's leftover
  UniqueFd fd(::openat(dir_fd, temp_name.c_str(),
                       O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!fd) return false;
  bool ok = write(fd.get()) && ::fsync(fd.get()) == 0 &&
            ::renameat(dir_fd, temp_name.c_str(), dir_fd, name.c_str()) == 0;
  if (!ok) {
    int saved = errno;
    ::unlinkat(dir_fd, temp_name.c_str(), 0);
    errno = saved;
    return false;
  }
  ::fsync(dir_fd);  // the rename itself is durable only once the directory is
  return true;
}

}  // namespace sandgate
