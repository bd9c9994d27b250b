#pragma once
// The names of the cgroup files a value lives in, by hierarchy version (the gateway's side of the
// sandboxes' cgroups; shared by the layout, the per-sandbox set and the sweep).
#include <string>

#include "cgroups.hpp"

namespace sandgate::sandbox {

inline std::string version_name(CgroupVersion v) {
  switch (v) {
    case CgroupVersion::v1:
      return "v1";
    case CgroupVersion::v2:
      return "v2";
    default:
      return "none";
  }
}

inline const char* memory_usage_file(CgroupVersion v) {
  return v == CgroupVersion::v2 ? "memory.current" : "memory.usage_in_bytes";
}

inline const char* memory_peak_file(CgroupVersion v) {
  return v == CgroupVersion::v2 ? "memory.peak" : "memory.max_usage_in_bytes";
}

inline const char* memory_limit_file(CgroupVersion v) {
  return v == CgroupVersion::v2 ? "memory.max" : "memory.limit_in_bytes";
}

}  // namespace sandgate::sandbox
