#pragma once
// Lets another request cancel a running call (MCP notifications/cancelled, a DELETE).
#include <functional>
#include <mutex>

namespace sandgate::sandbox {

class CallControl {
 public:
  // Thread-safe and idempotent. The running call's processes are killed.
  void cancel() {
    std::function<void()> hook;
    {
      std::lock_guard lock(mutex_);
      if (cancelled_) return;
      cancelled_ = true;
      hook = hook_;
    }
    if (hook) hook();
  }
  bool cancelled() const {
    std::lock_guard lock(mutex_);
    return cancelled_;
  }

  // Used by the sandbox while a call runs. Returns false when already cancelled.
  bool arm(std::function<void()> hook) {
    std::lock_guard lock(mutex_);
    hook_ = std::move(hook);
    return !cancelled_;
  }
  void disarm() {
    std::lock_guard lock(mutex_);
    hook_ = nullptr;
  }

 private:
  mutable std::mutex mutex_;
  bool cancelled_ = false;
  std::function<void()> hook_;
};

}  // namespace sandgate::sandbox
