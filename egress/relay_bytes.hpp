#pragma once
// One sandbox's egress byte caps (tenant_egress.hpp): the bytes its relay passed over the
// sandbox's life and in its current call, each chunk charged to the sandbox's spend
// (relay_account.hpp). Used on the relay's strand only.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "egress/relay_account.hpp"
#include "egress/tenant_egress.hpp"

namespace sandgate::egress {

// `bytes` in whole MiB, for a refusal's words.
std::string mib(std::uint64_t bytes);

class RelayBytes {
 public:
  RelayBytes(std::shared_ptr<const TenantEgress> policy, std::shared_ptr<RelayAccount> account);

  // The byte caps, before a connection is opened: why none may be, or "".
  std::string cap_reached();
  // Counts `n` bytes against the caps and charges them: "" when they may pass, else why not
  // (the connection's outcome: it is closed).
  std::string charge(std::size_t n);

 private:
  // A new call in the sandbox starts the per-call count again.
  void sync_call();

  std::shared_ptr<const TenantEgress> policy_;
  std::shared_ptr<RelayAccount> account_;
  std::uint64_t sandbox_bytes_ = 0;
  std::uint64_t call_bytes_ = 0;
  std::uint64_t call_number_ = 0;
};

}  // namespace sandgate::egress
