#include "fd_passing.hpp"

#include <sys/socket.h>

#include <cerrno>
#include <cstring>

namespace sandgate::sandbox {

int send_message(int socket, const void* data, std::size_t size, std::span<const int> fds) {
  iovec iov{const_cast<void*>(data), size};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  std::vector<char> control;
  if (!fds.empty()) {
    control.resize(CMSG_SPACE(sizeof(int) * fds.size()));
    msg.msg_control = control.data();
    msg.msg_controllen = control.size();
    cmsghdr* cmsg = CMSG_FIRSTHDR(&msg);
    cmsg->cmsg_level = SOL_SOCKET;
    cmsg->cmsg_type = SCM_RIGHTS;
    cmsg->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
    std::memcpy(CMSG_DATA(cmsg), fds.data(), sizeof(int) * fds.size());
  }
  for (;;) {
    if (::sendmsg(socket, &msg, MSG_NOSIGNAL) >= 0) return 0;
    if (errno != EINTR) return errno;
  }
}

ReceivedMessage receive_message(int socket, std::size_t max_size, int max_fds, bool nonblocking) {
  ReceivedMessage out;
  out.data.resize(max_size);
  iovec iov{out.data.data(), max_size};
  std::vector<char> control(CMSG_SPACE(sizeof(int) * static_cast<std::size_t>(max_fds)));
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control.data();
  msg.msg_controllen = control.size();
  ssize_t n;
  do {
    n = ::recvmsg(socket, &msg, MSG_CMSG_CLOEXEC | (nonblocking ? MSG_DONTWAIT : 0));
  } while (n < 0 && errno == EINTR);
  if (n < 0) {
    out.error = errno;
    out.data.clear();
    return out;
  }
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    std::size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (std::size_t i = 0; i < count; ++i) {
      int fd;
      std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
      out.fds.emplace_back(fd);
    }
  }
  out.data.resize(static_cast<std::size_t>(n));
  out.closed = (n == 0 && out.fds.empty());
  // A truncated message (more than asked for) is treated as malformed by the caller.
  if (msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) out.error = EMSGSIZE;
  return out;
}

}  // namespace sandgate::sandbox
