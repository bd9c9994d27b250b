#include "close_descriptors.hpp"

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>

namespace sandgate::sandbox {
namespace {

// Beyond this many numbers a blind loop would stall the caller; the kernel's default ceiling
// for any process (fs.nr_open) is 1 << 20.
constexpr std::uint64_t kMaxBlindClose = 1u << 20;

// struct linux_dirent64's head; the name follows.
struct DirentHead {
  std::uint64_t ino;
  std::int64_t off;
  unsigned short reclen;
  unsigned char type;
};

int parse_fd(const char* name) {
  if (*name < '0' || *name > '9') return -1;
  int n = 0;
  for (; *name != '\0'; ++name) {
    if (*name < '0' || *name > '9' || n > (1 << 30) / 10) return -1;
    n = n * 10 + (*name - '0');
  }
  return n;
}

// /proc/self/fd lists open descriptors by number, and reading it on while closing is safe
// (the kernel continues from the next number).
int close_listed(int first) {
  int dir = static_cast<int>(
      ::syscall(SYS_openat, AT_FDCWD, "/proc/self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (dir < 0) return errno;
  alignas(8) char buffer[4096];
  int error = 0;
  for (;;) {
    long n = ::syscall(SYS_getdents64, dir, buffer, sizeof buffer);
    if (n < 0) {
      if (errno == EINTR) continue;
      error = errno;
      break;
    }
    if (n == 0) break;
    for (long at = 0; at < n;) {
      const auto* head = reinterpret_cast<const DirentHead*>(buffer + at);
      const char* name = buffer + at + offsetof(DirentHead, type) + 1;
      int fd = parse_fd(name);
      if (fd >= first && fd != dir && ::syscall(SYS_close, fd) != 0 && errno != EBADF &&
          errno != EINTR)
        error = errno;
      at += head->reclen;
    }
  }
  ::syscall(SYS_close, dir);
  return error;
}

// No descriptor can be open at or above the hard limit unless the limit was lowered after it
// was opened, which the gateway never does.
int close_blindly(int first) {
  struct {
    std::uint64_t cur, max;  // the kernel's struct rlimit64
  } limit{};
  if (::syscall(SYS_prlimit64, 0, RLIMIT_NOFILE, nullptr, &limit) != 0) return errno;
  if (limit.max > kMaxBlindClose) return EMFILE;
  for (std::uint64_t fd = static_cast<std::uint64_t>(first); fd < limit.max; ++fd)
    ::syscall(SYS_close, static_cast<int>(fd));
  return 0;
}

}  // namespace

int close_descriptors_from(int first) {
  if (::syscall(SYS_close_range, first, ~0U, 0) == 0) return 0;
  if (close_listed(first) == 0) return 0;
  return close_blindly(first);
}

}  // namespace sandgate::sandbox
