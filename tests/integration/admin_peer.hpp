#pragma once
// A peer of the admin channel (server/admin/) as another uid, for the tests that check the
// gateway refuses it (admin_test.cpp, secrets_test.cpp).
#include <grp.h>
#include <linux/capability.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <string>

namespace sandgate::test {

// In a child as `uid` (and, with `dac_override`, still able to pass file permissions, so that
// only the gateway's own check stands between it and the channel): connects to `path` and sends
// `request` (a line; the sessions by default). Exit status: 10 connect refused by the file system,
// 11 connected and refused by the gateway, 12 connected and answered, 13 the child could not become
// `uid`.
inline int ask_as(uid_t uid, const std::string& path, bool dac_override,
                  const char* request = "{\"op\":\"sessions\"}\n") {
  // Everything the child needs is made before the fork: after it, in a process with threads,
  // only async-signal-safe calls.
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  REQUIRE(path.size() < sizeof address.sun_path);
  std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
  const std::size_t request_size = std::strlen(request);
  pid_t child = ::fork();
  if (child == 0) {
    if (dac_override && ::prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0) != 0) ::_exit(13);
    if (::setgroups(0, nullptr) != 0 || ::setresgid(uid, uid, uid) != 0 ||
        ::setresuid(uid, uid, uid) != 0)
      ::_exit(13);
    if (dac_override) {
      __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
      __user_cap_data_struct data[2]{};
      data[0].effective = data[0].permitted = 1u << CAP_DAC_OVERRIDE;
      if (::syscall(SYS_capset, &header, data) != 0) ::_exit(13);
    }
    int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) ::_exit(10);
    if (::write(fd, request, request_size) < 0) ::_exit(11);
    char answer[4096] = {};
    ssize_t n = ::read(fd, answer, sizeof answer - 1);
    ::_exit(n > 0 && std::strstr(answer, "refused: only the gateway's user") != nullptr ? 11 : 12);
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace sandgate::test
