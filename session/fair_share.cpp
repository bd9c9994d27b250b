#include "fair_share.hpp"

#include <algorithm>
#include <tuple>

namespace sandgate::session {

void FairShare::start(Tenant& t) {
  --free_;
  ++t.running;
  t.last_start = ++starts_;
}

FairShare::Admission FairShare::arrive(const std::string& tenant, std::size_t tenant_cap) {
  tenant_cap = std::max<std::size_t>(tenant_cap, 1);
  auto it = tenants_.try_emplace(tenant).first;
  Tenant& t = it->second;
  // While a slot is free, no waiting call could use it (finish() starts every one that can), so
  // a newcomer under its cap goes first only if its own tenant has nobody ahead of it.
  if (free_ > 0 && t.running < tenant_cap && t.waiting.empty()) {
    start(t);
    return {Admission::Kind::run};
  }
  std::optional<Ticket> pushed_out;
  if (waiting_ >= max_waiting_) {
    auto fullest = tenants_.end();
    for (auto o = tenants_.begin(); o != tenants_.end(); ++o)
      if (o != it &&
          (fullest == tenants_.end() || o->second.waiting.size() > fullest->second.waiting.size()))
        fullest = o;
    // "At least two more": taking one place leaves that tenant no fewer waiting than this one.
    if (fullest == tenants_.end() || fullest->second.waiting.size() < t.waiting.size() + 2) {
      forget_if_idle(it);
      return {Admission::Kind::refused};
    }
    pushed_out = fullest->second.waiting.back().ticket;
    fullest->second.waiting.pop_back();
    --waiting_;
  }
  Ticket ticket = next_ticket_++;
  t.waiting.push_back({ticket, tenant_cap});
  ++waiting_;
  return {Admission::Kind::wait, ticket, pushed_out};
}

FairShare::Tenants::iterator FairShare::next_to_start() {
  auto best = tenants_.end();
  for (auto it = tenants_.begin(); it != tenants_.end(); ++it) {
    const Tenant& t = it->second;
    if (t.waiting.empty() || t.running >= t.waiting.front().cap) continue;
    if (best == tenants_.end() ||
        std::tie(t.running, t.last_start) < std::tie(best->second.running, best->second.last_start))
      best = it;
  }
  return best;
}

std::optional<FairShare::Ticket> FairShare::finish(const std::string& tenant) {
  auto it = tenants_.find(tenant);
  if (it == tenants_.end() || it->second.running == 0) return std::nullopt;  // not ours
  --it->second.running;
  ++free_;
  forget_if_idle(it);
  auto next = next_to_start();
  if (next == tenants_.end()) return std::nullopt;
  Ticket ticket = next->second.waiting.front().ticket;
  next->second.waiting.pop_front();
  --waiting_;
  start(next->second);
  return ticket;
}

std::size_t FairShare::running(const std::string& tenant) const {
  auto it = tenants_.find(tenant);
  return it == tenants_.end() ? 0 : it->second.running;
}

void FairShare::forget_if_idle(Tenants::iterator it) {
  if (it->second.running == 0 && it->second.waiting.empty()) tenants_.erase(it);
}

}  // namespace sandgate::session
