#pragma once
// One tenant, resolved: everything the gateway applies to it — limits, shares, budgets, egress
// — with the gateway's defaults already in place. Built once where the tokens file or the OAuth
// policy is read (and built again on a reload), then handed down as an immutable shared value:
// sessions, the ledger's budgets and the egress relay read it, and none of them looks a tenant
// up by name.
//
// A per-tenant setting is a field here and a row of kTenantOptions below (its `key=value` word on
// a tokens-file or OAuth policy line); the one place that uses it reads the field.
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "egress/allow_list.hpp"
#include "egress/header_secret.hpp"
#include "egress/tenant_egress.hpp"
#include "ledger/budget.hpp"
#include "secrets/secrets_file.hpp"

namespace sandgate::tenant {

struct TenantTerms {
  std::string name;
  // Sessions and sandbox handles open at once.
  std::uint32_t max_sessions = 5'000;
  // USD one sandbox may spend before it ends.
  double spend_cap_usd = 1.0;
  // Its share of the gateway's call slots and live sandboxes; 0: no share smaller than the
  // gateway's own cap (where only one tenant can exist).
  std::uint32_t max_concurrent_calls = 0;
  std::uint32_t max_sandboxes = 0;
  // Budgets over UTC days and months (none: unlimited).
  std::optional<double> budget_usd_per_day;
  std::optional<double> budget_usd_per_month;
  // Egress: where its sandboxes may connect through the gateway's proxy (null or empty: nowhere,
  // and they get no proxy), and the caps.
  std::shared_ptr<const egress::AllowList> egress_allowed;
  std::uint32_t egress_connections = 16;
  std::uint64_t egress_bytes_per_call = 1ull << 30;
  std::uint64_t egress_bytes_per_sandbox = 4ull << 30;
  // The environments its calls may run in (issue #43), the first its default; empty: "base"
  // only, the system as it is. Checked against the environments file by the gateway.
  std::vector<std::string> environments;
  // The upstream MCP servers its sandboxes' code may call (issue #45, code mode), by their
  // names in the upstreams file; empty: none, and its sandboxes have no tool channel.
  std::vector<std::string> upstreams;
  // Secrets (issue #44): the operator's secrets file as loaded (set on the defaults every line
  // starts from; `secrets=` names from it), and the ones this tenant holds. Its sandboxes may
  // reach each one's host as if its egress list named it, and the relay adds the header.
  std::shared_ptr<const secrets::SecretSet> secret_catalog;
  std::vector<std::shared_ptr<const egress::HeaderSecret>> secrets;

  ledger::Budget budget() const { return {budget_usd_per_day, budget_usd_per_month}; }
  bool has_egress() const {
    return (egress_allowed && !egress_allowed->empty()) || !secrets.empty();
  }
  // What its sandboxes' relays enforce; null without egress.
  std::shared_ptr<const egress::TenantEgress> egress() const;

  bool operator==(const TenantTerms&) const = default;
};

using Terms = std::shared_ptr<const TenantTerms>;

// One `key=value` word: how its value is read (throwing std::invalid_argument or
// std::out_of_range on a bad one) into the field it sets.
struct TenantOption {
  std::string_view key;
  std::string_view form;  // what the value looks like, for the error message
  void (*apply)(TenantTerms& terms, const std::string& value);
};

// A bad value whose what() may be shown as it is (it never repeats what was written).
class OptionError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The value readers the rows use.
std::uint32_t whole_number(const std::string& value, std::uint32_t min, std::uint32_t max);
double positive_usd(const std::string& value);
std::uint64_t mebibytes(const std::string& value);
std::shared_ptr<const egress::AllowList> allow_list(const std::string& value);
std::vector<std::string> environment_names(const std::string& value);
std::vector<std::string> upstream_names(const std::string& value);
// `name[,name…]` from `catalog`; an unknown name is refused by its position.
std::vector<std::shared_ptr<const egress::HeaderSecret>> held_secrets(
    const std::string& value, const std::shared_ptr<const secrets::SecretSet>& catalog);

inline constexpr std::uint32_t kNoMax = UINT32_MAX;

inline constexpr TenantOption kTenantOptions[] = {
    {"max_sessions", "N",
     [](TenantTerms& t, const std::string& v) { t.max_sessions = whole_number(v, 0, kNoMax); }},
    {"spend_cap_usd", "X",
     [](TenantTerms& t, const std::string& v) { t.spend_cap_usd = positive_usd(v); }},
    // 0 would leave the tenant's calls waiting for ever.
    {"max_concurrent_calls", "N",
     [](TenantTerms& t, const std::string& v) {
       t.max_concurrent_calls = whole_number(v, 1, kNoMax);
     }},
    // 0 would refuse every call that needs a sandbox.
    {"max_sandboxes", "N",
     [](TenantTerms& t, const std::string& v) { t.max_sandboxes = whole_number(v, 1, kNoMax); }},
    {"budget_usd_per_day", "X",
     [](TenantTerms& t, const std::string& v) { t.budget_usd_per_day = positive_usd(v); }},
    {"budget_usd_per_month", "X",
     [](TenantTerms& t, const std::string& v) { t.budget_usd_per_month = positive_usd(v); }},
    {"egress", "host[:port],...",
     [](TenantTerms& t, const std::string& v) { t.egress_allowed = allow_list(v); }},
    // At most what --egress-connections allows.
    {"egress_connections", "N",
     [](TenantTerms& t, const std::string& v) { t.egress_connections = whole_number(v, 1, 4096); }},
    {"egress_mb_per_call", "N",
     [](TenantTerms& t, const std::string& v) { t.egress_bytes_per_call = mebibytes(v); }},
    {"egress_mb_per_sandbox", "N",
     [](TenantTerms& t, const std::string& v) { t.egress_bytes_per_sandbox = mebibytes(v); }},
    {"environments", "name[,name...]",
     [](TenantTerms& t, const std::string& v) { t.environments = environment_names(v); }},
    // Names of --upstreams' upstream MCP servers (issue #45).
    {"upstreams", "name[,name...]",
     [](TenantTerms& t, const std::string& v) { t.upstreams = upstream_names(v); }},
    // Names of --secrets-file's secrets (issue #44).
    {"secrets", "name,...",
     [](TenantTerms& t, const std::string& v) { t.secrets = held_secrets(v, t.secret_catalog); }},
};

// Sets what one `key=value` word says. Throws std::runtime_error saying `where` ("tokens file
// line 3") and which option is wrong, never what was written: a token pasted by mistake must
// not reach a log.
void apply_tenant_option(TenantTerms& terms, const std::string& option, const std::string& where,
                         int option_no);

}  // namespace sandgate::tenant
