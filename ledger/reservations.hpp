#pragma once
// Spend that replicas sharing one ledger reserve for a tenant, per budget period (issue #28).
// The database keeps, for each tenant and period, the total claimed: reserved by some replica,
// or settled by one as used past what it had reserved. A replica lets a tenant's calls run while
// what it used stays within what it reserved, and asks for another chunk when it does not: one
// atomic statement, never a round trip per call.
#include <string>

#include "ledger/budget_period.hpp"

namespace sandgate::ledger {

class ReservationStore {
 public:
  struct Grant {
    double granted = 0;  // what this reservation added
    double claimed = 0;  // the period's total claimed after it, all replicas together
  };
  virtual ~ReservationStore() = default;
  // Reserves up to `chunk` of `budget` for `tenant` in `period`, atomically: never past the
  // budget (granted = min(chunk, budget - claimed), or nothing). A period's first reservation
  // starts from what the ledger already holds for it. Throws LedgerError.
  virtual Grant reserve(const std::string& tenant, const Period& period, double chunk,
                        double budget) = 0;
  // Adds `usd` to what is claimed, whatever the budget: what was used past a reservation, or
  // (negative) what was reserved and not used, given back. The period's total after it. Throws
  // LedgerError.
  virtual double settle(const std::string& tenant, const Period& period, double usd) = 0;
};

}  // namespace sandgate::ledger
