#pragma once
// How many questions the gateway puts to the introspection endpoint: at most `per_second` a
// second, gateway-wide (a bucket holding a second's worth, so a burst of that many goes at
// once), and at most `max_in_flight` unanswered at a time. Anyone can send a made-up opaque
// token, and each one the gateway has not seen costs the authorization server a request (a
// TLS connection, the gateway's client credentials): without this, unauthenticated clients set
// the pace. A request beyond it is told to come back (503, Retry-After) instead of waiting:
// its token is not judged, and tokens already judged are answered from memory before this.
#include <chrono>
#include <cstddef>
#include <mutex>
#include <optional>
#include <utility>

namespace sandgate::auth {

// At most this many introspections unanswered at once (each holds a connection).
constexpr std::size_t kMaxIntrospectionsInFlight = 8;

class IntrospectionGate {
 public:
  using Clock = std::chrono::steady_clock;

  // One question's place in flight; given back when destroyed.
  class Pass {
   public:
    explicit Pass(IntrospectionGate* gate) : gate_(gate) {}
    Pass(Pass&& other) noexcept : gate_(std::exchange(other.gate_, nullptr)) {}
    Pass& operator=(Pass&&) = delete;
    Pass(const Pass&) = delete;
    ~Pass() {
      if (gate_) gate_->leave();
    }

   private:
    IntrospectionGate* gate_;
  };

  struct Entry {
    std::optional<Pass> pass;  // empty: not now
    bool busy = false;         // refused for the questions in flight (else for the rate)
    std::chrono::seconds retry_after{1};
  };

  IntrospectionGate(unsigned per_second, std::size_t max_in_flight = kMaxIntrospectionsInFlight);

  Entry enter(Clock::time_point now = Clock::now());

 private:
  void leave();

  const double per_second_;
  const std::size_t max_in_flight_;
  std::mutex mutex_;
  double tokens_;  // questions that may be asked now: up to per_second_
  Clock::time_point filled_;
  std::size_t in_flight_ = 0;
};

}  // namespace sandgate::auth
