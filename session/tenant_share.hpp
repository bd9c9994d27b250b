#pragma once
// A tenant's share of what the gateway's sessions hold together: calls running at once (of the
// gateway's call slots) and live sandboxes (of the sandbox cap and the memory budget they
// share). TenantSandboxes is where a session asks for a place for a fresh sandbox within its
// tenant's share; the registry keeps the count.
#include <boost/asio/awaitable.hpp>
#include <cstddef>
#include <functional>
#include <limits>
#include <utility>

namespace sandgate::session {

class Session;

struct TenantShare {
  static constexpr std::size_t kUnlimited = std::numeric_limits<std::size_t>::max();
  std::size_t calls = kUnlimited;      // the tenant's calls running at once
  std::size_t sandboxes = kUnlimited;  // the tenant's live sandboxes, those being made included
};

// A place held for one fresh sandbox until it is its session's (from then on it counts as live)
// or was not made. Given back on destruction; false when no place was granted.
class SandboxPlace {
 public:
  SandboxPlace() = default;
  explicit SandboxPlace(std::function<void()> give_back)
      : granted_(true), give_back_(std::move(give_back)) {}
  SandboxPlace(SandboxPlace&& o) noexcept
      : granted_(std::exchange(o.granted_, false)), give_back_(std::exchange(o.give_back_, {})) {}
  SandboxPlace& operator=(SandboxPlace&& o) noexcept {
    if (this != &o) {
      reset();
      granted_ = std::exchange(o.granted_, false);
      give_back_ = std::exchange(o.give_back_, {});
    }
    return *this;
  }
  ~SandboxPlace() { reset(); }
  explicit operator bool() const { return granted_; }
  void reset() {
    granted_ = false;
    if (auto give_back = std::exchange(give_back_, {})) give_back();
  }

 private:
  bool granted_ = false;
  std::function<void()> give_back_;
};

class TenantSandboxes {
 public:
  virtual ~TenantSandboxes() = default;
  // A place for one more live sandbox of `asking`'s tenant, whose share is `cap`. At the share,
  // one of the tenant's own sandboxes that nothing uses makes room (hibernated, or ended when it
  // cannot be); no place when every one of them is in use.
  virtual boost::asio::awaitable<SandboxPlace> place_for(const Session& asking,
                                                         std::size_t cap) = 0;
};

}  // namespace sandgate::session
