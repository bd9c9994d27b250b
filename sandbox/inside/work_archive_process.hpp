#pragma once
// Hibernation's pack and unpack, inside a transfer process (see transfer_process.hpp): it has
// already taken the sandbox program's uid and confinement (no capabilities, Landlock,
// seccomp, the sandbox's mount namespace), and runs the host's tar from the rootfs' /usr. So
// whatever an archive holds (absolute names, `..`, symlinks out of /work, devices, huge sparse
// files) can touch nothing the sandbox's own programs could not, and its size is bounded by
// /work's tmpfs (ENOSPC). The gateway only ever holds the archive as opaque bytes.
namespace sandgate::sandbox {

// Writes a zstd'd (or, without zstd, gzip'd) tar of /work's contents to `reply_fd`. Returns 0 or an
// errno (EIO: tar failed).
int pack_work(int reply_fd);
// Extracts the archive held in `archive_fd` (a memfd, as pack_work made it) into /work: tar and
// its decompressor read it in place. Returns 0 or an errno (EIO: tar refused the archive or ran
// out of room).
int unpack_work(int archive_fd);

}  // namespace sandgate::sandbox
