#pragma once
// One stretch of a sandbox's metered use, as the ledger keeps it: whose (tenant, and which
// session or handle by its first characters — never a whole id, which is a bearer secret),
// when, how much of each resource, at which prices, and what it came to.
#include <chrono>
#include <cstdint>
#include <string>

#include "ledger/budget_period.hpp"

namespace sandgate::ledger {

struct UsageRecord {
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
};

}  // namespace sandgate::ledger
