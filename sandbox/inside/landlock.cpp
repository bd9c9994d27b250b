#include "landlock.hpp"

#include <fcntl.h>
#include <linux/landlock.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <system_error>

#include "rootfs.hpp"
#include "sandbox/limits.hpp"

namespace sandgate::sandbox {
namespace {

// Rights newer than Debian 12's headers know, by ABI version.
constexpr std::uint64_t kTruncate = 1ULL << 14;  // ABI 3
constexpr std::uint64_t kIoctlDev = 1ULL << 15;  // ABI 5

constexpr std::uint64_t kRead = LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR;
constexpr std::uint64_t kExecute = LANDLOCK_ACCESS_FS_EXECUTE;
constexpr std::uint64_t kWriteTree =
    LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_REMOVE_DIR | LANDLOCK_ACCESS_FS_REMOVE_FILE |
    LANDLOCK_ACCESS_FS_MAKE_DIR | LANDLOCK_ACCESS_FS_MAKE_REG | LANDLOCK_ACCESS_FS_MAKE_SOCK |
    LANDLOCK_ACCESS_FS_MAKE_FIFO | LANDLOCK_ACCESS_FS_MAKE_SYM | LANDLOCK_ACCESS_FS_REFER;

std::uint64_t handled_for(int abi) {
  std::uint64_t all =
      kRead | kExecute | kWriteTree | LANDLOCK_ACCESS_FS_MAKE_CHAR | LANDLOCK_ACCESS_FS_MAKE_BLOCK;
  if (abi < 2) all &= ~LANDLOCK_ACCESS_FS_REFER;
  if (abi >= 3) all |= kTruncate;
  if (abi >= 5) all |= kIoctlDev;
  return all;
}

bool allow(int ruleset, const char* path, std::uint64_t access, std::uint64_t handled) {
  int fd = ::open(path, O_PATH | O_CLOEXEC);
  if (fd < 0) return errno == ENOENT;  // a path this host lacks needs no rule
  landlock_path_beneath_attr rule{access & handled, fd};
  long rc = ::syscall(SYS_landlock_add_rule, ruleset, LANDLOCK_RULE_PATH_BENEATH, &rule, 0);
  ::close(fd);
  return rc == 0;
}

}  // namespace

int landlock_abi_version() {
  long abi = ::syscall(SYS_landlock_create_ruleset, nullptr, 0, LANDLOCK_CREATE_RULESET_VERSION);
  return abi > 0 ? static_cast<int>(abi) : 0;
}

UniqueFd build_landlock_ruleset(bool layer_writable) {
  int abi = landlock_abi_version();
  if (abi == 0) return UniqueFd();
  std::uint64_t handled = handled_for(abi);
  landlock_ruleset_attr attr{};
  attr.handled_access_fs = handled;
  UniqueFd ruleset(static_cast<int>(::syscall(SYS_landlock_create_ruleset, &attr, sizeof attr, 0)));
  if (!ruleset) throw std::system_error(errno, std::generic_category(), "landlock_create_ruleset");
  std::uint64_t write_tree = kRead | kWriteTree | kTruncate;
  // Programs run from /usr and from the workspace; nothing is exec'd from /tmp or /dev/shm.
  bool ok = allow(ruleset.get(), "/", kRead, handled) &&
            allow(ruleset.get(), "/usr", kRead | kExecute, handled) &&
            allow(ruleset.get(), "/work", write_tree | kExecute, handled) &&
            allow(ruleset.get(), "/tmp", write_tree, handled) &&
            allow(ruleset.get(), "/dev/shm", write_tree, handled) &&
            // An environment's layer (absent without one): its packages' programs run from it;
            // only its build writes it.
            allow(ruleset.get(), kLayerMountPoint, (layer_writable ? write_tree : kRead) | kExecute,
                  handled);
  // The tool channel's sandgate-tool (issue #45; absent without one): run, never written.
  ok = ok && allow(ruleset.get(), kToolsBinDir, kRead | kExecute, handled);
  for (const char* node : {"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom"})
    ok = ok &&
         allow(ruleset.get(), node,
               LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_WRITE_FILE | kTruncate | kIoctlDev,
               handled);
  // /proc/self/fd/N and /dev/stdout are how programs reopen their own pipes.
  ok = ok && allow(ruleset.get(), "/proc", kRead | LANDLOCK_ACCESS_FS_WRITE_FILE, handled);
  // A layer the kernel offers but we failed to set up is an error, never silently skipped.
  if (!ok) throw std::system_error(errno, std::generic_category(), "landlock rules");
  return ruleset;
}

int apply_landlock(int ruleset_fd) {
  if (ruleset_fd < 0) return 0;
  return ::syscall(SYS_landlock_restrict_self, ruleset_fd, 0) == 0 ? 0 : errno;
}

}  // namespace sandgate::sandbox
