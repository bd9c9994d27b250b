#pragma once
// The file work of a transfer process (see file_transfer.hpp), run after the supervisor's
// child has taken the program's identity and confinement. Every path is resolved beneath
// /work with openat2(RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV): a symlink
// leading out of it, /proc/self/root or a mount crossing fail instead of being followed.
namespace sandgate::sandbox {

// Reads the request from `request_fd` (a memfd), does it, writes the reply to `reply_fd` (for
// `unpack`, reads the archive from it instead).
// Returns 0, or an errno when the request was malformed or the reply could not be written.
int serve_transfer(int request_fd, int reply_fd);

}  // namespace sandgate::sandbox
