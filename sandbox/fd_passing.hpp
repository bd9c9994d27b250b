#pragma once
// One message with file descriptors attached, over a SOCK_SEQPACKET socket.
#include <span>
#include <string>
#include <vector>

#include "common/unique_fd.hpp"

namespace sandgate::sandbox {

// Returns 0 or errno. Never raises SIGPIPE.
int send_message(int socket, const void* data, std::size_t size, std::span<const int> fds = {});

struct ReceivedMessage {
  std::string data;  // empty with `closed` when the peer has gone
  std::vector<UniqueFd> fds;
  bool closed = false;
  int error = 0;  // errno of a failed receive (EAGAIN when nothing is waiting)
};

// Receives one message of at most `max_size` bytes and up to `max_fds` descriptors.
ReceivedMessage receive_message(int socket, std::size_t max_size, int max_fds, bool nonblocking);

}  // namespace sandgate::sandbox
