#pragma once
// The spend cap and the lifetime of one session (or handle), across every sandbox it has had:
// a sandbox that ends (cap, lifetime, failure, hibernation) leaves its spend here, and the next
// one is started with what remains. The one place a session's spend and age live; sandbox/
// knows nothing of it (a sandbox only gets smaller limits).
//
// Not thread-safe: the session guards it with its own mutex.
#include <chrono>
#include <string>

#include "common/usd_text.hpp"
#include "sandbox/limits.hpp"

namespace sandgate::session {

using sandgate::usd_text;

class SessionAccount {
 public:
  using Clock = std::chrono::steady_clock;
  // `limits` are what the session's tenant may use per session: its spend cap and lifetime
  // count from `created`.
  SessionAccount(const sandbox::Limits& limits, Clock::time_point created)
      : cap_usd_(limits.spend_cap_usd), lifetime_(limits.lifetime), created_(created) {}

  // Why no sandbox may start for this session any more (its cap is spent or its lifetime is
  // over), in words for the model; empty while one may.
  std::string closed_reason(Clock::time_point now) const;
  // `base` with the spend cap and lifetime cut to what remains of the session's.
  sandbox::Limits remaining(sandbox::Limits base, Clock::time_point now) const;
  // Adds an ended sandbox's final spend.
  void settle(double sandbox_usd);

  double settled_usd() const { return settled_usd_; }
  double cap_usd() const { return cap_usd_; }
  std::chrono::seconds lifetime() const { return lifetime_; }
  // The words for a session whose cap is spent, or whose lifetime is over.
  std::string cap_text() const;
  std::string lifetime_text() const;

 private:
  double cap_usd_;
  std::chrono::seconds lifetime_;
  Clock::time_point created_;
  double settled_usd_ = 0;  // what its ended sandboxes spent
};

}  // namespace sandgate::session
