#include "token_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>

namespace sandgate::auth {

namespace {

std::string octal(mode_t mode) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "%04o", static_cast<unsigned>(mode & 07777));
  return buf;
}

struct Fd {
  int fd;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

ModeVerdict judge_token_file_mode(const std::filesystem::path& path, mode_t mode,
                                  bool read_only_mount) {
  ModeVerdict v;
  std::string name = "tokens file " + path.string() + " (mode " + octal(mode) + ")";
  if (!S_ISREG(mode)) {
    v.refusal = "tokens file " + path.string() + " is not a regular file";
  } else if ((mode & (S_IWGRP | S_IWOTH)) && !read_only_mount) {
    v.refusal = name +
                " is writable by group or others: anyone who can write it can add a token of "
                "their own. Run: chmod go-w " +
                path.string();
  } else if (mode & (S_IRGRP | S_IROTH)) {
    v.warning = name +
                " is readable by group or others: it holds digests only, but a short or "
                "guessable token can be found from its digest offline. Run: chmod 600 " +
                path.string() + " (Kubernetes: the Secret volume's defaultMode: 0400)";
  }
  return v;
}

LoadedTokens load_token_file(const std::filesystem::path& path, const Tenant& defaults) {
  // The checks and the read are on one open file: a file swapped in between cannot slip by.
  Fd file{::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK)};
  if (file.fd < 0)
    throw std::runtime_error("cannot read tokens file " + path.string() + ": " +
                             std::strerror(errno));
  struct stat st {};
  struct statvfs fs {};
  if (::fstat(file.fd, &st) != 0 || ::fstatvfs(file.fd, &fs) != 0)
    throw std::runtime_error("cannot stat tokens file " + path.string() + ": " +
                             std::strerror(errno));
  auto verdict = judge_token_file_mode(path, st.st_mode, (fs.f_flag & ST_RDONLY) != 0);
  if (!verdict.refusal.empty()) throw std::runtime_error(verdict.refusal);
  std::string text;
  char buf[8192];
  for (;;) {
    ssize_t n = ::read(file.fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0)
      throw std::runtime_error("cannot read tokens file " + path.string() + ": " +
                               std::strerror(errno));
    if (n == 0) break;
    text.append(buf, static_cast<std::size_t>(n));
    if (text.size() > (64u << 20)) throw std::runtime_error("tokens file is larger than 64 MiB");
  }
  return {TokenStore::parse(text, defaults), std::move(verdict.warning)};
}

}  // namespace sandgate::auth
