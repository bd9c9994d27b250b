#pragma once
// Hibernation's pack and unpack, inside a transfer process (see transfer_process.hpp): it has
// already taken the sandbox program's uid and confinement (no capabilities, Landlock,
// seccomp, the sandbox's mount namespace), and runs the host's tar from the rootfs' /usr. So
// whatever an archive holds (absolute names, `..`, symlinks out of /work, devices, huge sparse
// files) can touch nothing the sandbox's own programs could not, and its size is bounded by
// /work's tmpfs (ENOSPC). The gateway only ever holds the archive as opaque bytes.
#include <string>

namespace sandgate::sandbox {

// Writes a zstd'd (or, without zstd, gzip'd) tar of /work's contents to `reply_fd`. Returns 0 or an
// errno (EIO: tar failed).
int pack_work(int reply_fd);
// Extracts `archive` (as pack_work made it) into /work. Returns 0 or an errno (EIO: tar
// refused the archive or ran out of room).
int unpack_work(const std::string& archive);

}  // namespace sandgate::sandbox
