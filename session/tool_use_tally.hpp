#pragma once
// One sandbox's calls to upstream MCP servers (code mode, issue #45) as its usage log counts
// them: told by the sandbox's tool channel, on the channel's thread, read by the session when it
// makes the sandbox's usage records. Bounded: one entry per upstream the tenant may call.
#include <map>
#include <mutex>
#include <string>

#include "ledger/usage_record.hpp"

namespace sandgate::session {

class ToolUseTally {
 public:
  void add(const std::string& upstream, double usd) {
    std::lock_guard lock(mutex_);
    auto& use = totals_[upstream];
    ++use.calls;
    use.usd += usd;
  }
  std::map<std::string, ledger::ToolUse> totals() const {
    std::lock_guard lock(mutex_);
    return totals_;
  }

 private:
  mutable std::mutex mutex_;
  std::map<std::string, ledger::ToolUse> totals_;
};

}  // namespace sandgate::session
