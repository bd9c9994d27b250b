#pragma once
// The pool of host uid pairs a gateway's sandboxes take theirs from (slot i: host uids
// uid_base + 2i and + 2i + 1), shared with each sandbox's release callback.
#include <algorithm>
#include <cstdint>
#include <mutex>
#include <optional>
#include <vector>

#include "host.hpp"

namespace sandgate::sandbox {

struct SandboxHost::Slots {
  std::mutex mutex;
  std::vector<bool> used;
  std::optional<std::uint32_t> take() {
    std::lock_guard lock(mutex);
    for (std::uint32_t i = 0; i < used.size(); ++i) {
      if (!used[i]) {
        used[i] = true;
        return i;
      }
    }
    return std::nullopt;
  }
  std::size_t free_count() {
    std::lock_guard lock(mutex);
    return static_cast<std::size_t>(std::count(used.begin(), used.end(), false));
  }
  void give_back(std::uint32_t i) {
    std::lock_guard lock(mutex);
    used[i] = false;
  }
};

}  // namespace sandgate::sandbox
