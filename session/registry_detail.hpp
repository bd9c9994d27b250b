#pragma once
// What the registry's files (registry*.cpp) share and nobody else needs: kept out of
// registry.hpp so that it adds nothing to the registry's interface.
#include <chrono>
#include <string>

#include "session.hpp"

namespace sandgate::session::registry_detail {

inline Session::Clock::rep idle_seconds(const Session& s, Session::Clock::time_point now) {
  return std::chrono::duration_cast<std::chrono::seconds>(now - s.last_used()).count();
}

inline const char* kind_noun(SessionKind kind) {
  return kind == SessionKind::handle ? "sandbox" : "session";
}

}  // namespace sandgate::session::registry_detail
