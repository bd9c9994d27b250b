#include "sandbox_usage_log.hpp"

#include <algorithm>
#include <utility>

namespace sandgate::session {

SandboxUsageLog::SandboxUsageLog(UsageOwner owner, std::string key, ledger::Clock::time_point now)
    : owner_(std::move(owner)),
      key_(std::move(key)),
      day_(ledger::period_of(ledger::PeriodKind::day, now)),
      stretch_started_(now) {}

void SandboxUsageLog::count_call(std::uint64_t output_bytes) {
  ++calls_;
  output_bytes_ += output_bytes;
}

namespace {

// What `now` holds beyond `base`, upstream by upstream; none where nothing was added.
std::map<std::string, ledger::ToolUse> tool_use_since(
    const std::map<std::string, ledger::ToolUse>& now,
    const std::map<std::string, ledger::ToolUse>& base) {
  std::map<std::string, ledger::ToolUse> added;
  for (const auto& [upstream, use] : now) {
    ledger::ToolUse before;
    if (auto it = base.find(upstream); it != base.end()) before = it->second;
    if (use.calls > before.calls)
      added[upstream] = {use.calls - before.calls, use.usd - before.usd};
  }
  return added;
}

}  // namespace

ledger::UsageRecord SandboxUsageLog::stretch(const sandbox::SandboxUsage& total,
                                             const ToolTotals& tools,
                                             ledger::Clock::time_point ended) const {
  ledger::UsageRecord r;
  r.stretch = key_ + ":" + ledger::period_key(day_);
  r.tenant = owner_.tenant;
  r.owner = owner_.owner;
  r.owner_kind = owner_.owner_kind;
  r.replica = owner_.replica;
  r.started = stretch_started_;
  r.ended = std::max(ended, stretch_started_);
  r.cpu_seconds = total.cpu_seconds - base_.cpu_seconds;
  r.gib_seconds = total.gib_seconds - base_.gib_seconds;
  r.wall_seconds = std::chrono::duration<double>(r.ended - r.started).count();
  r.calls = calls_ - calls_base_;
  r.output_bytes = output_bytes_ - output_bytes_base_;
  r.usd_per_vcpu_hour = total.prices.usd_per_vcpu_hour;
  r.usd_per_gib_hour = total.prices.usd_per_gib_hour;
  r.usd = total.usd - base_.usd;
  r.tool_use = tool_use_since(tools, tool_use_base_);
  return r;
}

std::vector<ledger::UsageRecord> SandboxUsageLog::records(const sandbox::SandboxUsage& total,
                                                          ledger::Clock::time_point now) {
  std::vector<ledger::UsageRecord> out;
  auto tools = tool_use_->totals();  // one reading for both stretches
  if (now >= day_.end) {
    // What was metered since the last time counts to the day that ended (a second or so of
    // imprecision at midnight); its record ends inside that day, so the day's sum holds it.
    out.push_back(stretch(total, tools, day_.end - std::chrono::milliseconds(1)));
    day_ = ledger::period_of(ledger::PeriodKind::day, now);
    stretch_started_ = day_.start;
    base_ = total;
    calls_base_ = calls_;
    output_bytes_base_ = output_bytes_;
    tool_use_base_ = tools;
  }
  out.push_back(stretch(total, tools, now));
  return out;
}

ledger::UsageRecord SandboxUsageLog::final_record(const sandbox::SandboxUsage& total,
                                                  ledger::Clock::time_point now) const {
  // Its use stopped when it ended, however long after that the session lets go of it.
  auto ended = std::min(total.ended_at.value_or(now), now);
  auto r =
      stretch(total, tool_use_->totals(), std::min(ended, day_.end - std::chrono::milliseconds(1)));
  r.final = true;
  return r;
}

}  // namespace sandgate::session
