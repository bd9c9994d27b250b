#pragma once
// A small kernel statistics file read again and again (a cgroup's memory.current, cpu.stat,
// memory.events): opened once, then re-read from offset 0 with one pread — the kernel makes its
// text afresh each time — instead of an open, reads and a close per sample. The meter samples
// every sandbox every second and after every call.
#include <filesystem>
#include <optional>
#include <string>

#include "common/unique_fd.hpp"

namespace sandgate::sandbox {

class StatFile {
 public:
  StatFile() = default;
  // `writable`: opened for writing too, for files reset through the same descriptor (a
  // cgroup v2 memory.peak resets per open file).
  explicit StatFile(std::filesystem::path path, bool writable = false)
      : path_(std::move(path)), writable_(writable) {}

  // The file's current text (at most 4 KiB), or nullopt when it cannot be read.
  std::optional<std::string> read() const;
  // Writes `text` through the open descriptor (a writable file only); false when refused.
  bool write(const std::string& text);
  // Closes the file (before its cgroup is removed).
  void close() { fd_.reset(); }

 private:
  std::filesystem::path path_;
  bool writable_ = false;
  mutable UniqueFd fd_;
};

}  // namespace sandgate::sandbox
