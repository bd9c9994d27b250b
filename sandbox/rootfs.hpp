#pragma once
// Builds the sandbox's root filesystem inside its own mount namespace and pivots into it.
// Runs in the supervisor, as root of the sandbox's user namespace, before any program runs.
#include <sys/types.h>

#include <cstdint>
#include <string>

namespace sandgate::sandbox {

struct RootfsPlan {
  std::uint64_t work_bytes;
  std::uint64_t tmp_bytes;
  uid_t program_uid;  // owner of /work and /tmp inside the sandbox
  gid_t program_gid;
};

// Where the supervisor writes each call's program (read-only for the program).
constexpr const char* kCodeDir = "/code";

// Throws std::system_error naming the failing step.
void build_rootfs(const RootfsPlan& plan);

}  // namespace sandgate::sandbox
