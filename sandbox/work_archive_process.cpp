#include "work_archive_process.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>

namespace sandgate::sandbox {
namespace {

constexpr const char* kTar = "/usr/bin/tar";
constexpr const char* kZstd = "/usr/bin/zstd";
// The messages of tar and its compressor would name files of the sandbox: they go nowhere.
char* const kEnv[] = {const_cast<char*>("PATH=/usr/bin:/bin"), const_cast<char*>("LC_ALL=C"),
                      nullptr};

// Forks tar with `in` as its stdin and `out` as its stdout (-1: /dev/null) and waits for it.
// Returns its exit code, or -1 when it could not be run or was killed.
int run_tar(char* const argv[], int in, int out) {
  pid_t pid = ::fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    // A transfer killed at its timeout takes tar with it.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    int null = ::open("/dev/null", O_RDWR | O_CLOEXEC);
    if (null < 0) ::_exit(126);
    if (::dup2(in >= 0 ? in : null, 0) < 0 || ::dup2(out >= 0 ? out : null, 1) < 0 ||
        ::dup2(null, 2) < 0)  // 2 was the status pipe: tar never writes there
      ::_exit(126);
    ::execve(kTar, argv, kEnv);
    ::_exit(127);
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace

int pack_work(int reply_fd) {
  // zstd -1 when the rootfs (the host's /usr) has it: about ten times faster than gzip -1 at a
  // similar or better ratio; gzip, which every Debian has, otherwise. unpack_work tells them
  // apart by their magic bytes.
  bool zstd = ::access(kZstd, X_OK) == 0;
  // --sparse: a huge sparse file costs its data, not its apparent size.
  char* const argv[] = {const_cast<char*>("tar"),
                        const_cast<char*>("--create"),
                        const_cast<char*>("--sparse"),
                        const_cast<char*>("--one-file-system"),
                        const_cast<char*>(zstd ? "--use-compress-program=zstd -1 -q"
                                               : "--use-compress-program=gzip -1"),
                        const_cast<char*>("--file=-"),
                        const_cast<char*>("--directory=/work"),
                        const_cast<char*>("."),
                        nullptr};
  int code = run_tar(argv, -1, reply_fd);
  // 1: a file changed while it was read (a background process): the archive is still whole.
  return code == 0 || code == 1 ? 0 : EIO;
}

int unpack_work(const std::string& archive) {
  const bool zstd = archive.size() >= 4 && archive.compare(0, 4, "\x28\xb5\x2f\xfd") == 0;
  if (zstd && ::access(kZstd, X_OK) != 0) return ENOENT;
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) return errno;
  // tar may stop reading (a refused archive): a write then fails instead of killing us.
  ::signal(SIGPIPE, SIG_IGN);
  // As the sandbox's uid tar keeps no owners; it refuses `..` members and strips a leading /.
  char* const argv[] = {const_cast<char*>("tar"),
                        const_cast<char*>("--extract"),
                        const_cast<char*>(zstd ? "--zstd" : "--gzip"),
                        const_cast<char*>("--no-same-owner"),
                        const_cast<char*>("--file=-"),
                        const_cast<char*>("--directory=/work"),
                        nullptr};
  pid_t writer = ::fork();
  if (writer < 0) return errno;
  if (writer == 0) {
    // Feeds the archive while tar reads it (a pipe holds far less than an archive).
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    ::close(pipe_fds[0]);
    const char* data = archive.data();
    std::size_t left = archive.size();
    while (left > 0) {
      ssize_t n = ::write(pipe_fds[1], data, left);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) ::_exit(1);
      data += n;
      left -= static_cast<std::size_t>(n);
    }
    ::_exit(0);
  }
  ::close(pipe_fds[1]);
  int code = run_tar(argv, pipe_fds[0], -1);
  ::close(pipe_fds[0]);
  ::kill(writer, SIGKILL);
  while (::waitpid(writer, nullptr, 0) < 0 && errno == EINTR) {
  }
  return code == 0 ? 0 : EIO;
}

}  // namespace sandgate::sandbox
