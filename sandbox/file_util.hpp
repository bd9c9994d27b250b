#pragma once
// Small wrappers around file reads and writes: the kernel's control files (throwing), and the
// descriptor-level writes of the transfer process and the state directory.
#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace sandgate::sandbox {

// Writes `content` to an existing file; throws std::system_error naming the path on failure.
void write_file(const std::filesystem::path& path, const std::string& content);
// Reads a whole (small) file; std::nullopt when it cannot be opened.
std::optional<std::string> read_file(const std::filesystem::path& path);
// The number after `key ` in a "key value" per line file such as memory.events.
std::optional<std::uint64_t> read_keyed_value(const std::filesystem::path& path,
                                              const std::string& key);
// The value of `key` in "key value" lines (cpu.stat, memory.events).
std::optional<std::uint64_t> keyed_value(const std::string& text, const std::string& key);

// Writes all of `bytes` to `fd` (short writes and EINTR retried); false with errno set.
bool write_all(int fd, std::string_view bytes);

// Replaces the file `name` in the directory `dir_fd` with `bytes`, so that a crash at any moment
// leaves either the old file or the new one: a 0600 `temp_name` beside it (never through a
// symlink), written and fsynced, renamed over `name`, then the directory fsynced. False with
// errno set on failure; the temporary file is removed then.
bool replace_file_durably(int dir_fd, const std::string& name, const std::string& temp_name,
                          std::string_view bytes);

}  // namespace sandgate::sandbox
