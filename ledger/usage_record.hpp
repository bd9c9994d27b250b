#pragma once
// One stretch of a sandbox's metered use, as the ledger keeps it: whose (tenant, and which
// session or handle by its first characters — never a whole id, which is a bearer secret),
// when, how much of each resource, at which prices, and what it came to.
//
// A stretch is one sandbox within one UTC day: its totals grow while the sandbox lives and are
// saved again and again under the same `stretch` key (the latest wins), so a gateway killed
// without warning loses only what it metered since its last save. A sandbox alive across
// midnight closes one stretch and opens the next, so each day's spend stays that day's.
#include <chrono>
#include <cstdint>
#include <map>
#include <string>

#include "ledger/budget_period.hpp"

namespace sandgate::ledger {

// The calls a stretch's sandbox made to one upstream MCP server (code mode, issue #45): every
// call the gateway sent it, whatever came back, and what their prices added to the stretch's
// `usd` (already counted there: this says where it came from).
struct ToolUse {
  std::uint64_t calls = 0;
  double usd = 0;
  bool operator==(const ToolUse&) const = default;
};

struct UsageRecord {
  std::string stretch;  // unique: the gateway's instance, the sandbox's number, the day
  std::string tenant;
  std::string owner;       // a session's or handle's id prefix, as the logs show it
  std::string owner_kind;  // "session" or "handle"
  std::string replica;     // the gateway that metered it ("" for a lone one)
  Clock::time_point started;
  Clock::time_point ended;
  double cpu_seconds = 0;
  double gib_seconds = 0;  // memory held, GiB × seconds
  double wall_seconds = 0;
  std::uint64_t calls = 0;
  std::uint64_t output_bytes = 0;
  double usd_per_vcpu_hour = 0;
  double usd_per_gib_hour = 0;
  double usd = 0;
  std::map<std::string, ToolUse> tool_use{};  // by upstream name; empty without code mode
  // The sandbox's last record (it ended): never replaced by a live one collected before it, not
  // stored.
  bool final = false;
};

}  // namespace sandgate::ledger
