#pragma once
#include <cstddef>
#include <string>
#include <vector>

namespace sandgate::environment {

// The gateway's settings for environments (flags --environments*).
struct EnvironmentsConfig {
  std::string file;       // the definitions (--environments); "": no environments
  std::string store_dir;  // where layers are built and kept; "": <--state-dir>/environments
  std::vector<std::string> built_ahead;  // layers built ahead, looked up read-only
  std::size_t builds_at_once = 1;

  bool operator==(const EnvironmentsConfig&) const = default;
};

}  // namespace sandgate::environment
