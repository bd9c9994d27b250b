#include "egress/connection_history.hpp"

#include <algorithm>
#include <string_view>

namespace sandgate::egress {

void ConnectionHistory::add(const ConnectionEnd& end) {
  Record record;
  record.started = end.started;
  record.duration_ms = static_cast<std::uint64_t>(end.duration.count());
  if (end.labels != nullptr) {
    record.tenant = end.labels->tenant;
    record.session = end.labels->session;
  }
  record.method = end.method;
  record.host = end.host;
  record.port = end.port;
  record.outcome = connection_end_name(end.kind);
  // Without the "refused: " the outcome says (as the call's network report).
  static constexpr std::string_view kRefused = "refused: ";
  record.reason =
      end.reason.rfind(kRefused, 0) == 0 ? end.reason.substr(kRefused.size()) : end.reason;
  record.secret = end.secret;
  record.bytes_up = end.bytes_up;
  record.bytes_down = end.bytes_down;
  add(std::move(record));
}

void ConnectionHistory::add(Record record, Clock::time_point now) {
  std::lock_guard lock(mutex_);
  record.ended = now;
  auto& kept = by_tenant_[record.tenant];
  kept.push_back(std::move(record));
  ++total_;
  if (kept.size() > kPerTenant) {
    kept.pop_front();
    --total_;
  }
  // Every tenant's expired records, at most once a minute: a tenant that stopped connecting
  // does not keep its records past kKept for long.
  if (now - last_sweep_ > std::chrono::minutes(1)) {
    forget_expired_locked(now);
    last_sweep_ = now;
  }
  if (total_ > kTotal) trim_busiest_locked();
}

// Records older than kKept go (each tenant's are in the order they ended).
void ConnectionHistory::forget_expired_locked(Clock::time_point now) {
  for (auto it = by_tenant_.begin(); it != by_tenant_.end();) {
    auto& kept = it->second;
    while (!kept.empty() && now - kept.front().ended > kKept) {
      kept.pop_front();
      --total_;
    }
    it = kept.empty() ? by_tenant_.erase(it) : std::next(it);
  }
}

// Over kTotal: the tenant holding the most loses its oldest.
void ConnectionHistory::trim_busiest_locked() {
  auto busiest = std::max_element(by_tenant_.begin(), by_tenant_.end(), [](auto& a, auto& b) {
    return a.second.size() < b.second.size();
  });
  if (busiest == by_tenant_.end()) return;
  busiest->second.pop_front();
  --total_;
  if (busiest->second.empty()) by_tenant_.erase(busiest);
}

std::vector<ConnectionHistory::Record> ConnectionHistory::find(const Query& query,
                                                               Clock::time_point now) const {
  std::vector<Record> out;
  std::lock_guard lock(mutex_);
  auto take = [&](const std::deque<Record>& kept) {
    for (const auto& record : kept) {
      if (now - record.ended > kKept) continue;
      if (query.since.count() > 0 && now - record.ended > query.since) continue;
      if (!query.session.empty() && record.session != query.session) continue;
      out.push_back(record);
    }
  };
  if (!query.tenant.empty()) {
    if (auto it = by_tenant_.find(query.tenant); it != by_tenant_.end()) take(it->second);
    return out;
  }
  for (const auto& [tenant, kept] : by_tenant_) take(kept);
  std::stable_sort(out.begin(), out.end(),
                   [](const Record& a, const Record& b) { return a.ended < b.ended; });
  return out;
}

std::size_t ConnectionHistory::size() const {
  std::lock_guard lock(mutex_);
  return total_;
}

}  // namespace sandgate::egress
