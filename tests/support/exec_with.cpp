// Test helper: runs a program with its standard error in a file and, on request, on a kernel
// that looks as if it had no Landlock (a seccomp filter answers every Landlock system call
// with ENOSYS, as a kernel built without it does). Filters are inherited across exec and by
// every child, so the gateway and its sandboxes see the same kernel.
//
//   exec_with [--stderr FILE] [--no-landlock] -- PROGRAM [ARGS...]
#include <fcntl.h>
#include <seccomp.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

namespace {

bool deny_landlock() {
  scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
  if (!ctx) return false;
  bool ok = true;
  for (int nr : {SYS_landlock_create_ruleset, SYS_landlock_add_rule, SYS_landlock_restrict_self})
    ok = ok && seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), nr, 0) == 0;
  ok = ok && seccomp_load(ctx) == 0;
  seccomp_release(ctx);
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  int i = 1;
  for (; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--") {
      ++i;
      break;
    }
    if (arg == "--stderr" && i + 1 < argc) {
      int fd = ::open(argv[++i], O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
      if (fd < 0 || ::dup2(fd, 2) < 0) {
        std::perror("exec_with: --stderr");
        return 127;
      }
      ::close(fd);
    } else if (arg == "--no-landlock") {
      if (!deny_landlock()) {
        std::fprintf(stderr, "exec_with: cannot install the seccomp filter\n");
        return 127;
      }
    } else {
      std::fprintf(stderr, "exec_with: unknown option %s\n", argv[i]);
      return 127;
    }
  }
  if (i >= argc) {
    std::fprintf(stderr, "usage: exec_with [--stderr FILE] [--no-landlock] -- PROGRAM [ARGS...]\n");
    return 127;
  }
  ::execv(argv[i], argv + i);
  std::fprintf(stderr, "exec_with: exec %s: %s\n", argv[i], std::strerror(errno));
  return 127;
}
