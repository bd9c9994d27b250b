#pragma once
// Who gets the gateway's next call slot: the bookkeeping behind CallSlots, with no waiting and
// no locking of its own, so that its decisions can be tested step by step.
//
// Each tenant may run at most its cap of calls at once (a call carries its session's cap), so
// one tenant can never hold every slot while others wait. When a slot frees, it goes to the
// waiting tenant with the fewest calls running, ties to the one that started a call longest
// ago (round-robin); a tenant's own calls start in arrival order. A call of a tenant at its
// cap waits even while slots are free. Waiting places are bounded overall; when they are all
// taken, a newcomer takes the place of the newest waiting call of the tenant with the most
// waiting calls if that tenant has at least two more than the newcomer's, so one tenant
// cannot fill the queue either. With one tenant this is a FIFO semaphore whose permits are
// that tenant's cap.
#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>

namespace sandgate::session {

class FairShare {
 public:
  using Ticket = std::uint64_t;

  struct Admission {
    enum class Kind { run, wait, refused } kind;
    // Set for wait: what finish() returns when this call starts.
    Ticket ticket = 0;
    // A waiting call this one took the place of: it is refused.
    std::optional<Ticket> pushed_out = std::nullopt;
  };

  FairShare(std::size_t slots, std::size_t max_waiting) : free_(slots), max_waiting_(max_waiting) {}

  // A call of `tenant`, whose cap is `tenant_cap` (at least 1), asks for a slot.
  Admission arrive(const std::string& tenant, std::size_t tenant_cap);
  // A running call of `tenant` ended: the waiting call that starts in its place, if any.
  std::optional<Ticket> finish(const std::string& tenant);

  std::size_t free_slots() const { return free_; }
  std::size_t waiting() const { return waiting_; }
  std::size_t running(const std::string& tenant) const;

 private:
  struct Waiter {
    Ticket ticket;
    std::size_t cap;
  };
  struct Tenant {
    std::size_t running = 0;
    std::deque<Waiter> waiting;
    std::uint64_t last_start = 0;  // order of its latest start: smaller = served longer ago
  };
  using Tenants = std::map<std::string, Tenant>;

  void start(Tenant& t);
  // The tenant whose first waiting call should start now, or end().
  Tenants::iterator next_to_start();
  void forget_if_idle(Tenants::iterator it);

  std::size_t free_;
  std::size_t max_waiting_;
  std::size_t waiting_ = 0;
  Ticket next_ticket_ = 1;
  std::uint64_t starts_ = 0;
  Tenants tenants_;
};

}  // namespace sandgate::session
