#pragma once
// Tells a request's handler that its client closed the connection while the answer was being
// made. A handler decides what that means: nothing for a 2025-era call (the spec lets a call
// outlive its stream), cancellation for a 2026-07-28 request (closing the stream cancels).
#include <functional>
#include <mutex>
#include <vector>

namespace sandgate::server {

class ClientWatch {
 public:
  // `action` runs once, on the connection's strand, when the client goes; at once when it has
  // gone already. Actions must be cheap and must not block.
  void on_gone(std::function<void()> action) {
    std::unique_lock lock(mutex_);
    if (!gone_) {
      actions_.push_back(std::move(action));
      return;
    }
    lock.unlock();
    action();
  }
  void mark_gone() {
    std::vector<std::function<void()>> run;
    {
      std::lock_guard lock(mutex_);
      if (gone_) return;
      gone_ = true;
      run.swap(actions_);
    }
    for (auto& action : run) action();
  }
  bool gone() const {
    std::lock_guard lock(mutex_);
    return gone_;
  }

 private:
  mutable std::mutex mutex_;
  bool gone_ = false;
  std::vector<std::function<void()>> actions_;
};

}  // namespace sandgate::server
