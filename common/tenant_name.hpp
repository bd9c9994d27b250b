#pragma once
// How long a tenant's name may be, wherever it is made (a tokens-file line, an OAuth issuer and
// claim) and wherever it is kept (the saved registry, the ledger, logs and metrics): one bound,
// so that a name accepted at the door is never dropped later (a restarted gateway would lose
// that tenant's sessions and hibernated /work).
#include <cstddef>

namespace sandgate {

inline constexpr std::size_t kMaxTenantNameBytes = 256;

}  // namespace sandgate
