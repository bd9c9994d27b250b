#include "auth/introspection_gate.hpp"

#include <algorithm>
#include <cmath>

namespace sandgate::auth {

IntrospectionGate::IntrospectionGate(unsigned per_second, std::size_t max_in_flight)
    : per_second_(std::max(1u, per_second)),
      max_in_flight_(std::max<std::size_t>(1, max_in_flight)),
      tokens_(per_second_),
      filled_(Clock::now()) {}

IntrospectionGate::Entry IntrospectionGate::enter(Clock::time_point now) {
  Entry out;
  std::lock_guard lock(mutex_);
  if (now > filled_) {
    double seconds = std::chrono::duration<double>(now - filled_).count();
    tokens_ = std::min(per_second_, tokens_ + seconds * per_second_);
    filled_ = now;
  }
  if (in_flight_ >= max_in_flight_) {
    // A place frees when an answer comes, within the fetch's deadline; a second is a guess
    // that keeps clients from hammering.
    out.busy = true;
    return out;
  }
  if (tokens_ < 1) {
    double wait = (1 - tokens_) / per_second_;
    out.retry_after = std::chrono::seconds(std::max<long>(1, std::lround(std::ceil(wait))));
    return out;
  }
  tokens_ -= 1;
  ++in_flight_;
  out.pass.emplace(this);
  return out;
}

void IntrospectionGate::leave() {
  std::lock_guard lock(mutex_);
  --in_flight_;
}

}  // namespace sandgate::auth
