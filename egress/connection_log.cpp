#include "egress/connection_log.hpp"

namespace sandgate::egress {

std::shared_ptr<ConnectionLog::Entry> ConnectionLog::open(std::uint64_t call,
                                                          const std::string& method,
                                                          const std::string& host,
                                                          std::uint16_t port) {
  std::lock_guard lock(mutex_);
  Call* current = nullptr;
  for (auto& kept : calls_)
    if (kept.number == call) current = &kept;
  if (current == nullptr) {
    calls_.push_back(Call{call, {}, 0});
    while (calls_.size() > kCallsKept) calls_.pop_front();
    current = &calls_.back();
  }
  if (current->entries.size() >= kPerCall) {
    ++current->more;
    return nullptr;
  }
  auto entry = std::make_shared<Entry>();
  entry->call = call;
  entry->method = method;
  entry->host = host;
  entry->port = port;
  current->entries.push_back(entry);
  return entry;
}

ConnectionLog::CallReport ConnectionLog::of_call(std::uint64_t call) const {
  std::lock_guard lock(mutex_);
  CallReport report;
  for (const auto& kept : calls_) {
    if (kept.number != call) continue;
    for (const auto& entry : kept.entries) report.entries.push_back(*entry);
    report.more = kept.more;
  }
  return report;
}

}  // namespace sandgate::egress
