#pragma once
// What a relay asks of whoever owns the sandbox it serves (session/: the sandbox's meter and
// call count), so that egress/ knows nothing of sandboxes.
#include <cstdint>

namespace sandgate::egress {

class RelayAccount {
 public:
  virtual ~RelayAccount() = default;
  // Charges bytes relayed (either way) to the sandbox's spend. False when it wants no more: it
  // has ended, or reached its spend cap with these.
  virtual bool charge(std::uint64_t bytes) = 0;
  // Changes whenever a new call starts in the sandbox: the per-call byte cap counts from there.
  virtual std::uint64_t call_number() const = 0;
};

}  // namespace sandgate::egress
