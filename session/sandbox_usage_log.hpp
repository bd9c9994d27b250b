#pragma once
// One sandbox's metered use as the ledger keeps it: stretches of one UTC day each
// (ledger/usage_record.hpp), their totals counted from the sandbox's cumulative meter. A sandbox
// alive across midnight closes the day's stretch and opens the next, so each day's spend stays
// that day's.
//
// Not thread-safe: its session guards it with its own mutex.
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ledger/budget_period.hpp"
#include "ledger/budgets.hpp"
#include "ledger/usage_record.hpp"
#include "ledger/usage_writer.hpp"
#include "sandbox/sandbox.hpp"
#include "session/tool_use_tally.hpp"

namespace sandgate::session {

// Whose a sandbox's use is: its records carry these.
struct UsageOwner {
  std::string tenant;
  std::string owner;       // the session's or handle's log prefix, never its whole id
  std::string owner_kind;  // "session" or "handle"
  std::string replica;
};

// Where a registry's sessions record their sandboxes' use (the ledger's writer), and under which
// names. Shared with the sessions, which may outlive the registry in a coroutine frame.
struct UsageReporting {
  std::shared_ptr<ledger::UsageSink> sink;
  // The tenants' budgets (null: none): a tenant that spent one runs no new call.
  std::shared_ptr<ledger::Budgets> budgets;
  // This gateway process (random at each start): stretch keys stay unique across restarts and
  // replicas writing to one ledger.
  std::string instance;
  std::string replica;
};

class SandboxUsageLog {
 public:
  // `key` names the sandbox uniquely among every gateway writing to the same ledger (this
  // gateway process's instance and the sandbox's id); `now` is when it was made.
  SandboxUsageLog(UsageOwner owner, std::string key, ledger::Clock::time_point now);

  void count_call(std::uint64_t output_bytes);
  // Where the sandbox's tool channel counts its calls to upstream MCP servers.
  const std::shared_ptr<ToolUseTally>& tool_use() const { return tool_use_; }
  // Records for `total`, the sandbox's use so far, at `now`: the open stretch's, after the
  // previous day's last one when a UTC midnight passed since the last time asked.
  std::vector<ledger::UsageRecord> records(const sandbox::SandboxUsage& total,
                                           ledger::Clock::time_point now);
  // The last record of a sandbox that ended: its open stretch with `total`, ending when the
  // sandbox did (`total.ended_at`, else `now`) and no later than that stretch's day (an ended
  // sandbox opens no new day). Marked final: the writer keeps it over any live record.
  ledger::UsageRecord final_record(const sandbox::SandboxUsage& total,
                                   ledger::Clock::time_point now) const;

 private:
  using ToolTotals = std::map<std::string, ledger::ToolUse>;
  ledger::UsageRecord stretch(const sandbox::SandboxUsage& total, const ToolTotals& tools,
                              ledger::Clock::time_point ended) const;

  UsageOwner owner_;
  std::string key_;
  ledger::Period day_;
  ledger::Clock::time_point stretch_started_;
  sandbox::SandboxUsage base_;  // the meter's totals when the open stretch began
  std::uint64_t calls_ = 0, output_bytes_ = 0;
  std::uint64_t calls_base_ = 0, output_bytes_base_ = 0;
  std::shared_ptr<ToolUseTally> tool_use_ = std::make_shared<ToolUseTally>();
  ToolTotals tool_use_base_;  // the tally when the open stretch began
};

}  // namespace sandgate::session
