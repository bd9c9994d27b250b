#pragma once
// Descriptor-level writes that must not be torn: every byte written (short writes and EINTR
// retried), and a file replaced so that a crash at any moment leaves the old one or the new one.
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

namespace sandgate {

// Writes all of `bytes` to `fd` (short writes and EINTR retried); false with errno set.
bool write_all(int fd, std::string_view bytes);

// Replaces the file `name` in the directory `dir_fd` with `bytes`, so that a crash at any moment
// leaves either the old file or the new one: a 0600 `temp_name` beside it (never through a
// symlink), written and fsynced, renamed over `name`, then the directory fsynced. False with
// errno set on failure; the temporary file is removed then.
bool replace_file_durably(int dir_fd, const std::string& name, const std::string& temp_name,
                          std::string_view bytes);

// Copies exactly `size` bytes of `source`, from its offset 0, to `fd` inside the kernel
// (sendfile): the bytes never pass through this process's memory. False with errno set (EIO
// when the source holds fewer).
bool copy_all(int source, int fd, std::uint64_t size);

// replace_file_durably, the new file's content written by `write` (given the temporary file's
// descriptor; false with errno set when it failed).
bool replace_file_durably_with(int dir_fd, const std::string& name, const std::string& temp_name,
                               const std::function<bool(int)>& write);

}  // namespace sandgate
