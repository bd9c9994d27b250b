#pragma once
// Fires once when a request must be cancelled, and runs what was registered for that. The HTTP
// server fires it for a client that closed its connection (2026-07-28: closing the stream is
// cancellation); the 2025 transport fires it for notifications/cancelled. Whoever runs the
// request registers what cancelling means (the execute tool: kill the call in whichever
// sandbox runs it).
#include <functional>
#include <mutex>
#include <vector>

namespace sandgate {

class CancelSignal {
 public:
  // `action` runs once when the signal fires; at once (on the caller's thread) when it has
  // fired already. Actions must be cheap and must not block.
  void on_cancel(std::function<void()> action) {
    std::unique_lock lock(mutex_);
    if (!fired_) {
      actions_.push_back(std::move(action));
      return;
    }
    lock.unlock();
    action();
  }
  void cancel() {
    std::vector<std::function<void()>> run;
    {
      std::lock_guard lock(mutex_);
      if (fired_) return;
      fired_ = true;
      run.swap(actions_);
    }
    for (auto& action : run) action();
  }
  bool cancelled() const {
    std::lock_guard lock(mutex_);
    return fired_;
  }

 private:
  mutable std::mutex mutex_;
  bool fired_ = false;
  std::vector<std::function<void()>> actions_;
};

}  // namespace sandgate
