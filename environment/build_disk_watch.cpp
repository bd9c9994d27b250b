#include "environment/build_disk_watch.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <filesystem>

namespace sandgate::environment {
namespace fs = std::filesystem;

DirectoryUse directory_use(const std::string& dir, std::uint64_t max_bytes,
                           std::uint64_t max_entries, const std::atomic<bool>* stop) {
  DirectoryUse use;
  std::error_code ec;
  // Never through a symbolic link: they are entries here, not directories to enter.
  fs::recursive_directory_iterator it(dir, fs::directory_options::skip_permission_denied, ec);
  for (; !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    ++use.entries;
    struct stat st {};
    if (::lstat(it->path().c_str(), &st) != 0) continue;  // gone meanwhile
    auto allocated = static_cast<std::uint64_t>(st.st_blocks) * 512;
    use.bytes += S_ISREG(st.st_mode) ? std::max(static_cast<std::uint64_t>(st.st_size), allocated)
                                     : allocated;
    if (use.bytes > max_bytes || use.entries > max_entries) break;
    if (stop && stop->load(std::memory_order_relaxed)) break;
  }
  return use;
}

BuildDiskWatch::BuildDiskWatch(std::string dir, std::uint64_t max_bytes,
                               std::function<void(std::string)> over,
                               std::chrono::milliseconds every)
    : dir_(std::move(dir)), max_bytes_(max_bytes), over_(std::move(over)), every_(every) {
  thread_ = std::thread([this] { watch(); });
}

BuildDiskWatch::~BuildDiskWatch() {
  {
    std::lock_guard lock(mutex_);  // not lost between the watch's check and its wait
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

std::string BuildDiskWatch::tripped() const {
  std::lock_guard lock(mutex_);
  return tripped_;
}

void BuildDiskWatch::watch() {
  std::unique_lock lock(mutex_);
  while (!wake_.wait_for(lock, every_, [this] { return stopping_.load(); })) {
    lock.unlock();
    auto use = directory_use(dir_, max_bytes_, kMaxEntries, &stopping_);
    if (stopping_) return;
    std::string why;
    if (use.bytes > max_bytes_)
      why = "the setup wrote more than its max_size_mb (" + std::to_string(max_bytes_ >> 20) +
            " MiB) into the layer";
    else if (use.entries > kMaxEntries)
      why = "the setup made more than " + std::to_string(kMaxEntries) + " files in the layer";
    lock.lock();
    if (why.empty()) continue;
    tripped_ = why;
    lock.unlock();
    over_(why);
    return;
  }
}

}  // namespace sandgate::environment
