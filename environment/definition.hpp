#pragma once
// An environment as the operator defines it (issue #43): a name, a setup script whose installs
// make its layer, a verify command the finished layer must pass on its own, where its build may
// connect, and what the model is told of it. Read from the --environments file, a JSON object of
// name -> definition:
//
//   {"analysis": {"setup": "pip install scikit-learn==1.5.2",
//                 "verify": "python3 -c 'import sklearn'",
//                 "egress": ["pypi.internal.example"], "preload": ["sklearn"],
//                 "description": "scikit-learn 1.5",
//                 "pool": {"min": 0, "max": 4}, "build_timeout_s": 900, "max_size_mb": 4096}}
#include <chrono>
#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace sandgate::environment {

// The name of the system as it is (no layer): every tenant's default when it names none.
inline constexpr std::string_view kBase = "base";

struct Definition {
  std::string name;
  std::string setup;   // bash, run in /work with the layer writable at /env
  std::string verify;  // bash, run in a fresh sandbox with the finished layer only; must exit 0
  // Allow-list entries (egress/allow_list.hpp) the build may reach; empty: no egress at all.
  std::vector<std::string> egress;
  // Python modules its ready sandboxes import before they are handed out.
  std::vector<std::string> preload;
  std::string description;  // for the model (the execute tool's description)
  // Ready sandboxes kept for it: at least `pool_min`, more under demand up to `pool_max`.
  std::uint32_t pool_min = 0;
  std::uint32_t pool_max = 2;
  std::chrono::seconds build_timeout{900};
  std::uint64_t max_size_bytes = 4ull << 30;

  bool operator==(const Definition&) const = default;
};

// A definition the gateway refuses; what() names the environment and the key, and why.
class DefinitionError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Every definition of a file's text, by name. Throws DefinitionError.
std::map<std::string, Definition> parse_definitions(std::string_view json_text);
// The same, read from `path`. Throws DefinitionError (an unreadable file included).
std::map<std::string, Definition> read_definitions_file(const std::string& path);

// "" when `name` may name an environment (1–63 of a-z, 0-9, '-', '_', starting with a letter or
// digit; not "base"), else why not.
std::string name_problem(std::string_view name);

// What identifies the layer a definition builds, as 64 hex digits: the setup, the verify command
// and the egress list, with a format version. The same definition is built once (on every
// replica alike); a changed one is a new layer. The description, preload and pool bounds do not
// change the layer, so editing them rebuilds nothing.
std::string layer_hash(const Definition& definition);

}  // namespace sandgate::environment
