#pragma once
// Gateways whose spend is easy to reason about: $1 per CPU-second and memory nearly free, so a
// call's spend is its CPU time and an idle sandbox adds next to nothing; and programs that burn
// a given amount of CPU time.
#include <string>
#include <vector>

#include "two_tenant_dir.hpp"

namespace sandgate::test {

// The options of a gateway for `dir`'s two tenants, with its state directory, priced as above
// and a per-session cap far away; `more` after them.
inline std::vector<std::string> cpu_priced(const TwoTenantDir& dir,
                                           std::vector<std::string> more = {}) {
  std::vector<std::string> args = {
      "--token-file", dir.tokens.string(), "--state-dir", dir.state.string(), "--price-vcpu-hour",
      "3600",         "--price-gib-hour",  "0.000001",    "--spend-cap-usd",  "100"};
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

// Python that uses about `seconds` of CPU time, then prints "burnt".
inline std::string cpu_burn(double seconds) {
  return "import time\nt = time.process_time()\nwhile time.process_time() - t < " +
         std::to_string(seconds) + ": pass\nprint('burnt')";
}

}  // namespace sandgate::test
