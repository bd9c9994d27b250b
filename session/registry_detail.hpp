#pragma once
// What the registry's files (registry*.cpp) share and nobody else needs: kept out of
// registry.hpp so that it adds nothing to the registry's interface.
#include <algorithm>
#include <chrono>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "session.hpp"

namespace sandgate::session::registry_detail {

inline Session::Clock::rep idle_seconds(const Session& s, Session::Clock::time_point now) {
  return std::chrono::duration_cast<std::chrono::seconds>(now - s.last_used()).count();
}

// Sorts `sessions` by `key` (ascending; descending when `descending`), read once per session:
// such keys (last use, memory held) change while a sort runs, and std::sort needs an order that
// holds from one comparison to the next.
template <class Key>
void sort_by(std::vector<std::shared_ptr<Session>>& sessions, Key key, bool descending = false) {
  using Value = decltype(key(*sessions.front()));
  std::vector<std::pair<Value, std::shared_ptr<Session>>> keyed;
  keyed.reserve(sessions.size());
  for (auto& s : sessions) keyed.emplace_back(key(*s), std::move(s));
  std::stable_sort(keyed.begin(), keyed.end(), [descending](const auto& a, const auto& b) {
    return descending ? b.first < a.first : a.first < b.first;
  });
  for (std::size_t i = 0; i < sessions.size(); ++i) sessions[i] = std::move(keyed[i].second);
}

inline Session::Clock::time_point last_use(const Session& s) {
  return s.last_used();
}

inline std::uint64_t memory_held(const Session& s) {
  return s.sandbox_memory_bytes();
}

inline const char* kind_noun(SessionKind kind) {
  return kind == SessionKind::handle ? "sandbox" : "session";
}

}  // namespace sandgate::session::registry_detail
