#pragma once
// Small wrappers around file reads and writes: the kernel's control files (throwing); the
// descriptor-level writes that must not be torn are common/durable_file.
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

}  // namespace sandgate::sandbox
