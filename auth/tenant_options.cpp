#include "auth/tenant_options.hpp"

#include <cmath>
#include <limits>
#include <memory>
#include <stdexcept>

namespace sandgate::auth {
namespace {

std::uint32_t whole_number(const std::string& value, std::uint32_t min) {
  std::size_t used = 0;
  long long n = std::stoll(value, &used);
  if (used != value.size() || n < min || n > std::numeric_limits<std::uint32_t>::max())
    throw std::invalid_argument("out of range");
  return static_cast<std::uint32_t>(n);
}

}  // namespace

void apply_tenant_option(Tenant& tenant, const std::string& option, const std::string& where,
                         int option_no) {
  auto eq = option.find('=');
  std::string key = option.substr(0, eq),
              value = eq == std::string::npos ? "" : option.substr(eq + 1);
  // Neither the key nor the value is repeated: whatever was written there is not echoed.
  auto bad = [&] {
    return std::runtime_error(where + ": bad option " + std::to_string(option_no) +
                              " (expected max_sessions=N, spend_cap_usd=X, "
                              "max_concurrent_calls=N, max_sandboxes=N, budget_usd_per_day=X, "
                              "budget_usd_per_month=X, egress=host[:port],..., "
                              "egress_connections=N, egress_mb_per_call=N or "
                              "egress_mb_per_sandbox=N)");
  };
  try {
    std::size_t used = 0;
    if (key == "max_sessions") {
      tenant.max_sessions = whole_number(value, 0);
    } else if (key == "max_concurrent_calls") {
      // 0 would leave the tenant's calls waiting for ever.
      tenant.max_concurrent_calls = whole_number(value, 1);
    } else if (key == "max_sandboxes") {
      // 0 would refuse every call that needs a sandbox.
      tenant.max_sandboxes = whole_number(value, 1);
    } else if (key == "egress") {
      try {
        tenant.egress = std::make_shared<const egress::AllowList>(egress::AllowList::parse(value));
      } catch (const std::invalid_argument& e) {
        // Names the entry by position only (egress::AllowList::parse never echoes it).
        throw std::runtime_error(where + ": option " + std::to_string(option_no) + ": " +
                                 e.what());
      }
    } else if (key == "egress_connections") {
      tenant.egress_connections = whole_number(value, 1);
      if (*tenant.egress_connections > 4096) throw bad();  // as --egress-connections
    } else if (key == "egress_mb_per_call" || key == "egress_mb_per_sandbox") {
      (key == "egress_mb_per_call" ? tenant.egress_mb_per_call : tenant.egress_mb_per_sandbox) =
          whole_number(value, 1);
    } else if (key == "spend_cap_usd" || key == "budget_usd_per_day" ||
               key == "budget_usd_per_month") {
      double x = std::stod(value, &used);
      if (used != value.size() || !(x > 0) || !std::isfinite(x)) throw bad();
      (key == "spend_cap_usd"        ? tenant.spend_cap_usd
       : key == "budget_usd_per_day" ? tenant.budget_usd_per_day
                                     : tenant.budget_usd_per_month) = x;
    } else {
      throw bad();
    }
  } catch (const std::logic_error&) {
    throw bad();
  }
}

}  // namespace sandgate::auth
