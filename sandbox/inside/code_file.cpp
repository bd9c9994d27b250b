#include "code_file.hpp"

#include <fcntl.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "common/unique_fd.hpp"

namespace sandgate::sandbox {

int write_code_file(int memfd, const std::string& path) {
  struct stat st {};
  if (::fstat(memfd, &st) != 0) return errno;
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) return errno;
  UniqueFd file(::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0444));
  if (!file) return errno;
  off_t offset = 0;
  while (offset < st.st_size) {
    ssize_t n = ::sendfile(file.get(), memfd, &offset, static_cast<size_t>(st.st_size - offset));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return n < 0 ? errno : EIO;
  }
  return 0;
}

}  // namespace sandgate::sandbox
