#include "session_account.hpp"

namespace sandgate::session {

std::string SessionAccount::cap_text() const {
  return "it has spent its " + usd_text(cap_usd_) + " spend cap (spent " + usd_text(settled_usd_) +
         ")";
}

std::string SessionAccount::lifetime_text() const {
  return "its lifetime of " + std::to_string(lifetime_.count()) + " s is over";
}

std::string SessionAccount::closed_reason(Clock::time_point now) const {
  if (settled_usd_ >= cap_usd_) return cap_text();
  if (now - created_ >= lifetime_) return lifetime_text();
  return {};
}

sandbox::Limits SessionAccount::remaining(sandbox::Limits base, Clock::time_point now) const {
  base.spend_cap_usd = cap_usd_ - settled_usd_;
  // Whole seconds, rounded up: the sandbox may outlive the session by under a second, and a
  // call after that finds the session's lifetime over (closed_reason is exact).
  auto left = lifetime_ - (now - created_);
  base.lifetime = std::chrono::ceil<std::chrono::seconds>(left);
  if (base.lifetime < std::chrono::seconds(1)) base.lifetime = std::chrono::seconds(1);
  return base;
}

void SessionAccount::settle(double sandbox_usd) {
  if (sandbox_usd > 0) settled_usd_ += sandbox_usd;
}

}  // namespace sandgate::session
