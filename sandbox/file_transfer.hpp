#pragma once
// Files into and out of a sandbox's /work, as the sandbox's own unprivileged uid sees them.
//
// The gateway never opens a path of a sandbox on the host: a program could have planted a
// symlink there pointing at a host file. Instead the supervisor forks a transfer process that
// takes the program's identity and confinement (uid, no capabilities, Landlock, seccomp, its
// mount namespace) and resolves every path beneath /work with openat2(RESOLVE_BENEATH). This
// file is the small binary format both sides speak, through two memfds: a request the gateway
// writes and a reply the transfer process writes (for `unpack`, the second memfd instead holds
// the archive the gateway wrote, read in place). The reply is written inside the sandbox, so
// the gateway parses it as hostile: every count and length is bounded.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sandgate::sandbox {

enum class TransferOp : std::uint32_t {
  write = 1,     // write each file (parents created), replacing what was there
  read = 2,      // read each named file
  read_dir = 3,  // read every regular file of one directory (sorted by name, bounded count)
  // Hibernation (work_archive.hpp): the transfer process runs tar as the sandbox's own uid.
  pack = 4,  // the reply is a compressed tar of all of /work (raw bytes, no entries)
  // No files: the second memfd holds such an archive (tar reads it there, no copy), extracted
  // into /work; no reply.
  unpack = 5,
};

// Why one file could not be moved, in words a model can act on (file_status_text).
enum class FileStatus : std::uint32_t {
  ok = 0,
  not_found = 1,
  is_directory = 2,
  not_regular = 3,   // a FIFO, socket or device
  outside_work = 4,  // a symlink (or path) leading out of /work
  too_large = 5,     // over the per-file cap or what is left of the call's; size is known
  invalid_path = 6,
  failed = 7,  // another error (errno says which): no space, permission, ...
};
const char* file_status_text(FileStatus status);

// Hard bounds of the format, whatever the caller's caps.
inline constexpr std::size_t kMaxTransferPath = 4096;
inline constexpr std::uint32_t kMaxTransferFiles = 1000;

struct TransferRequest {
  TransferOp op = TransferOp::read;
  bool remove_after = false;  // read, read_dir: delete each file that was read whole
  std::uint64_t max_bytes_each = 0;
  std::uint64_t max_bytes_total = 0;
  std::uint32_t max_files = 0;  // read_dir: at most this many files
  // write: (path, content); read: (path, ""); read_dir: one (directory, ""); pack, unpack: none.
  std::vector<std::pair<std::string, std::string>> files;
};

struct TransferredFile {
  std::string path;  // relative to /work
  FileStatus status = FileStatus::failed;
  int error = 0;           // errno, for `failed`
  std::uint64_t size = 0;  // the file's size (written: bytes written)
  std::string content;     // read: the bytes (empty unless ok)
};

// A path a client gave, as a path relative to /work ("a/b.txt"), or nullopt when it is not
// confined there: absolute outside /work, `..`, empty components are folded, NUL, too long.
std::optional<std::string> work_relative_path(std::string_view path);

std::string encode_request(const TransferRequest& request);
// Parses a request inside the transfer process; nullopt when malformed.
std::optional<TransferRequest> decode_request(std::string_view bytes);

// The reply is a run of entries, one per file, up to its end.
std::string encode_reply_entry(const TransferredFile& file);
// Parses the transfer process's reply (hostile) against the request that asked for it: no more
// files than asked for, no file over the per-file cap, no more bytes than the total cap.
std::optional<std::vector<TransferredFile>> decode_reply(std::string_view bytes,
                                                         const TransferRequest& request);

}  // namespace sandgate::sandbox
