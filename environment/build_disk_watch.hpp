#pragma once
// Bounds the disk an environment's setup takes while it runs (issue #43). The layer directory is
// on the gateway's own filesystem, where nothing counts what one directory holds; the seal's
// exact check comes only when the setup ends, and a setup could fill the disk before that. So a
// thread of its own walks the directory once a second and, when it holds more than the bound
// (bytes, or entries: a flood of empty files takes inodes), calls `over` — which ends the build's
// sandbox. A setup can write at most about a second's worth past the bound before it is stopped.
// The walk runs on its own thread: never on the strand the sandboxes are made on.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace sandgate::environment {

struct DirectoryUse {
  std::uint64_t bytes = 0;    // regular files' size or allocated blocks, whichever is more
  std::uint64_t entries = 0;  // files, directories, links
};

// What `dir` holds, never following a symbolic link; entries that vanish during the walk (a
// package manager's temporary files) are skipped. Stops counting once past either bound, or
// when `stop` turns true (the build ended: its coroutine waits for no walk).
DirectoryUse directory_use(const std::string& dir, std::uint64_t max_bytes,
                           std::uint64_t max_entries, const std::atomic<bool>* stop = nullptr);

class BuildDiskWatch {
 public:
  static constexpr std::uint64_t kMaxEntries = 2'000'000;

  // `over` is called once, on the watch's thread, with why.
  BuildDiskWatch(std::string dir, std::uint64_t max_bytes, std::function<void(std::string)> over,
                 std::chrono::milliseconds every = std::chrono::seconds(1));
  ~BuildDiskWatch();  // stops the watch (a walk under way within an entry) and joins its thread
  BuildDiskWatch(const BuildDiskWatch&) = delete;
  BuildDiskWatch& operator=(const BuildDiskWatch&) = delete;

  // Why it called `over`; "" when it did not.
  std::string tripped() const;

 private:
  void watch();

  const std::string dir_;
  const std::uint64_t max_bytes_;
  const std::function<void(std::string)> over_;
  const std::chrono::milliseconds every_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::atomic<bool> stopping_{false};
  std::string tripped_;
  std::thread thread_;
};

}  // namespace sandgate::environment
