#pragma once
// Descriptor-level writes that must not be torn: every byte written (short writes and EINTR
// retried), and a file replaced so that a crash at any moment leaves the old one or the new one.
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

}  // namespace sandgate
