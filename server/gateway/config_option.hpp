#pragma once
// One row of the option table (config.cpp and the *_options.cpp of each area): a flag, its
// environment variable, its default as help shows it, and what it sets; with the value parsers rows
// share.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "server/gateway/config.hpp"

namespace sandgate::server::options_detail {

using Setter = std::function<void(Config&, const std::string&)>;

struct Option {
  const char* flag;      // --name (value options take "--name VALUE" or "--name=VALUE")
  const char* env;       // SANDGATE_*, or nullptr
  const char* fallback;  // the default, as shown in help
  const char* help;
  Setter set;  // nullptr for a switch handled by `toggle`
  bool is_switch = false;
};

// Each throws std::invalid_argument saying what was expected.
std::uint64_t to_u64(const std::string& v, std::uint64_t min, std::uint64_t max);
double to_positive(const std::string& v);
bool to_bool(const std::string& v);
// Comma-separated, empty items dropped.
std::vector<std::string> to_list(const std::string& v);

// The rows of an area each (session_options.cpp, ledger_options.cpp, call_options.cpp,
// sandbox_options.cpp, replica_options.cpp): sessions and their state, the usage ledger, calls
// and their limits, sandboxes, replicas.
std::vector<Option> session_options();
std::vector<Option> ledger_options();
std::vector<Option> call_options();
std::vector<Option> sandbox_options();
std::vector<Option> replica_options();
// The OAuth resource server's rows (--resource-url, --oauth-*).
std::vector<Option> oauth_options();
// The egress proxy's rows (--egress-*).
std::vector<Option> egress_options();
// The environments' rows (--environments*, --environment-builds).
std::vector<Option> environment_options();
// The rows of secrets the sandbox never holds (--secrets-*, --egress-ca-file).
std::vector<Option> secrets_options();
// Code mode's rows (--upstreams, --tool-*; issue #45).
std::vector<Option> upstream_options();
// Why the OAuth settings cannot be used together ("" when they can).
std::string oauth_problem(const Config& c);

}  // namespace sandgate::server::options_detail
