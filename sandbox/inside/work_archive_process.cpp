#include "work_archive_process.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/unique_fd.hpp"

namespace sandgate::sandbox {
namespace {

constexpr const char* kTar = "/usr/bin/tar";
constexpr const char* kZstd = "/usr/bin/zstd";
constexpr const char* kGzip = "/usr/bin/gzip";
constexpr char kZstdMagic[4] = {'\x28', '\xb5', '\x2f', '\xfd'};
// The pipe between tar and its compressor: at 1 MiB (the unprivileged maximum) the two take
// turns a few times per MiB instead of sixteen, which on few cores is most of an unpack.
constexpr int kPipeBytes = 1 << 20;
// The messages of tar and its compressor would name files of the sandbox: they go nowhere.
char* const kEnv[] = {const_cast<char*>("PATH=/usr/bin:/bin"), const_cast<char*>("LC_ALL=C"),
                      nullptr};

// Forks `program` with `in` as its stdin and `out` as its stdout (-1: /dev/null). Returns its
// pid, or -1.
pid_t spawn(const char* program, char* const argv[], int in, int out) {
  pid_t pid = ::fork();
  if (pid != 0) return pid;
  // A transfer killed at its timeout takes its helpers with it.
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  ::signal(SIGPIPE, SIG_DFL);
  int null = ::open("/dev/null", O_RDWR | O_CLOEXEC);
  if (null < 0) ::_exit(126);
  if (::dup2(in >= 0 ? in : null, 0) < 0 || ::dup2(out >= 0 ? out : null, 1) < 0 ||
      ::dup2(null, 2) < 0)  // 2 was the status pipe: the helpers never write there
    ::_exit(126);
  ::execve(program, argv, kEnv);
  ::_exit(127);
}

// Its exit code (126/127: it could not be set up or exec'd), or -1 when it could not be
// forked or was killed.
int wait_exit(pid_t pid) {
  if (pid < 0) return -1;
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// The exit codes of `first | second`, `first` reading `in` and `second` writing `out`. Run as
// two processes of our own rather than tar's --use-compress-program, which, with the archive
// on a descriptor, adds a tar process copying it through a second pipe.
struct PipelineExit {
  int first = -1;
  int second = -1;
  bool started = false;  // both forked (a failed fork: the sandbox's process limit)

  bool ran() const {
    return started && first != 126 && first != 127 && second != 126 && second != 127;
  }
};
PipelineExit run_pipeline(const char* first_program, char* const first_argv[],
                          const char* second_program, char* const second_argv[], int in, int out) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return {};  // out of descriptors: not started
  UniqueFd read_end(fds[0]), write_end(fds[1]);
  ::fcntl(write_end.get(), F_SETPIPE_SZ, kPipeBytes);  // a smaller pipe still works
  pid_t first = spawn(first_program, first_argv, in, write_end.get());
  pid_t second = spawn(second_program, second_argv, read_end.get(), out);
  // Ours closed, each side sees the other's end: EOF or EPIPE when one stops early.
  read_end.reset();
  write_end.reset();
  return {wait_exit(first), wait_exit(second), first > 0 && second > 0};
}

}  // namespace

int pack_work(int reply_fd) {
  // zstd -1 when the rootfs (the host's /usr) has it: about ten times faster than gzip -1 at a
  // similar or better ratio; gzip, which every Debian has, otherwise. unpack_work tells them
  // apart by their magic bytes.
  bool zstd = ::access(kZstd, X_OK) == 0;
  // --sparse: a huge sparse file costs its data, not its apparent size.
  char* const tar[] = {const_cast<char*>("tar"),      const_cast<char*>("--create"),
                       const_cast<char*>("--sparse"), const_cast<char*>("--one-file-system"),
                       const_cast<char*>("--file=-"), const_cast<char*>("--directory=/work"),
                       const_cast<char*>("."),        nullptr};
  char* const compress[] = {const_cast<char*>(zstd ? "zstd" : "gzip"), const_cast<char*>("-1"),
                            const_cast<char*>("-q"), const_cast<char*>("-c"), nullptr};
  auto code = run_pipeline(kTar, tar, zstd ? kZstd : kGzip, compress, -1, reply_fd);
  // Not started is not a damaged /work: the caller is told apart (EAGAIN, not EIO).
  if (!code.ran()) return EAGAIN;
  // tar's 1: a file changed while it was read (a background process): the archive is still
  // whole.
  return (code.first == 0 || code.first == 1) && code.second == 0 ? 0 : EIO;
}

int unpack_work(int archive_fd) {
  char magic[4] = {};
  if (::pread(archive_fd, magic, sizeof magic, 0) != static_cast<ssize_t>(sizeof magic)) return EIO;
  const bool zstd = std::memcmp(magic, kZstdMagic, sizeof magic) == 0;
  if (zstd && ::access(kZstd, X_OK) != 0) return ENOENT;
  // The decompressor reads the memfd itself, from its start: no copy of the archive.
  if (::lseek(archive_fd, 0, SEEK_SET) != 0) return errno;
  char* const decompress[] = {const_cast<char*>(zstd ? "zstd" : "gzip"), const_cast<char*>("-d"),
                              const_cast<char*>("-q"), const_cast<char*>("-c"), nullptr};
  // As the sandbox's uid tar keeps no owners; it refuses `..` members and strips a leading /.
  char* const tar[] = {const_cast<char*>("tar"),
                       const_cast<char*>("--extract"),
                       const_cast<char*>("--no-same-owner"),
                       const_cast<char*>("--file=-"),
                       const_cast<char*>("--directory=/work"),
                       nullptr};
  auto code = run_pipeline(zstd ? kZstd : kGzip, decompress, kTar, tar, archive_fd, -1);
  if (!code.ran()) return EAGAIN;
  return code.first == 0 && code.second == 0 ? 0 : EIO;
}

}  // namespace sandgate::sandbox
