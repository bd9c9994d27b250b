#pragma once
// The gateway process's own resident memory, for /metrics.
#include <cstdint>

namespace sandgate::server {

// Resident bytes of this process (/proc/self/statm); 0 when it cannot be read.
std::uint64_t process_resident_bytes();

}  // namespace sandgate::server
