#include "tenant/tenant_terms.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace sandgate::tenant {

std::shared_ptr<const egress::TenantEgress> TenantTerms::egress() const {
  if (!has_egress()) return nullptr;
  auto out = std::make_shared<egress::TenantEgress>();
  if (egress_allowed) out->allowed = *egress_allowed;
  // A secret's host is reachable as if listed (an IP literal's address too: it is named).
  for (const auto& secret : secrets) out->allowed.add(secret->destination);
  out->secrets = secrets;
  out->max_connections = egress_connections;
  out->max_bytes_per_call = egress_bytes_per_call;
  out->max_bytes_per_sandbox = egress_bytes_per_sandbox;
  return out;
}

std::uint32_t whole_number(const std::string& value, std::uint32_t min, std::uint32_t max) {
  std::size_t used = 0;
  long long n = std::stoll(value, &used);
  if (used != value.size() || n < min || n > max) throw std::out_of_range("out of range");
  return static_cast<std::uint32_t>(n);
}

double positive_usd(const std::string& value) {
  std::size_t used = 0;
  double x = std::stod(value, &used);
  if (used != value.size() || !(x > 0) || !std::isfinite(x)) throw std::out_of_range("not > 0");
  return x;
}

std::uint64_t mebibytes(const std::string& value) {
  return std::uint64_t{whole_number(value, 1, std::numeric_limits<std::uint32_t>::max())} << 20;
}

std::shared_ptr<const egress::AllowList> allow_list(const std::string& value) {
  try {
    return std::make_shared<const egress::AllowList>(egress::AllowList::parse(value));
  } catch (const std::invalid_argument& e) {
    // Names the entry by position only (egress::AllowList::parse never echoes it).
    throw OptionError(e.what());
  }
}

namespace {

// `name[,name…]`: each of `shape` (said as `rule`), none twice, at most 64. Names the bad one
// by its position, never echoing what was written.
template <class Shape>
std::vector<std::string> name_list(const std::string& value, const std::string& noun,
                                   const std::string& rule, Shape shape) {
  std::vector<std::string> names;
  std::size_t start = 0;
  while (start <= value.size()) {
    std::size_t comma = value.find(',', start);
    if (comma == std::string::npos) comma = value.size();
    std::string name = value.substr(start, comma - start);
    auto position = std::to_string(names.size() + 1);
    if (!shape(name)) throw OptionError(noun + " " + position + " is not a name (" + rule + ")");
    if (std::find(names.begin(), names.end(), name) != names.end())
      throw OptionError(noun + " " + position + " is named twice");
    names.push_back(std::move(name));
    if (names.size() > 64) throw OptionError("more than 64 " + noun + "s");
    start = comma + 1;
  }
  return names;
}

}  // namespace

std::vector<std::string> environment_names(const std::string& value) {
  // The environment's own rule (environment/definition.hpp: name_problem), checked against the
  // environments file by the gateway; here only its shape.
  return name_list(
      value, "environment", "1 to 63 of a-z, 0-9, '-', '_'", [](const std::string& name) {
        bool shaped = !name.empty() && name.size() <= 63 && name[0] != '-' && name[0] != '_';
        for (char c : name)
          shaped =
              shaped && ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_');
        return shaped;
      });
}

std::vector<std::string> upstream_names(const std::string& value) {
  // The upstream's own rule (upstream/definition.hpp), checked against the upstreams file by
  // the gateway; here only its shape.
  return name_list(
      value, "upstream", "a-z, then up to 31 of a-z, 0-9, '_'", [](const std::string& name) {
        bool shaped = !name.empty() && name.size() <= 32 && name[0] >= 'a' && name[0] <= 'z';
        for (char c : name)
          shaped = shaped && ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_');
        return shaped;
      });
}

std::vector<std::shared_ptr<const egress::HeaderSecret>> held_secrets(
    const std::string& value, const std::shared_ptr<const secrets::SecretSet>& catalog) {
  std::vector<std::shared_ptr<const egress::HeaderSecret>> held;
  std::size_t position = 1;
  for (std::size_t start = 0;; ++position) {
    auto comma = value.find(',', start);
    std::string name = value.substr(start, comma == std::string::npos ? comma : comma - start);
    if (name.empty()) throw OptionError("secret " + std::to_string(position) + " is empty");
    auto secret = catalog ? catalog->find(name) : nullptr;
    // By position: what was written is never repeated.
    if (!secret)
      throw OptionError("secret " + std::to_string(position) +
                        (catalog ? " is not in --secrets-file"
                                 : " names a secret, and this gateway has no --secrets-file"));
    for (const auto& earlier : held)
      if (earlier == secret)
        throw OptionError("secret " + std::to_string(position) + " is named twice");
    held.push_back(std::move(secret));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return held;
}

namespace {

std::string expected_forms() {
  std::string out;
  for (const auto& option : kTenantOptions) {
    if (!out.empty()) out += ", ";
    out += std::string(option.key) + "=" + std::string(option.form);
  }
  return out;
}

}  // namespace

void apply_tenant_option(TenantTerms& terms, const std::string& option, const std::string& where,
                         int option_no) {
  auto eq = option.find('=');
  std::string key = option.substr(0, eq),
              value = eq == std::string::npos ? "" : option.substr(eq + 1);
  // Neither the key nor the value is repeated: whatever was written there is not echoed.
  const std::string which = where + ": option " + std::to_string(option_no);
  for (const auto& known : kTenantOptions) {
    if (known.key != key) continue;
    try {
      known.apply(terms, value);
      return;
    } catch (const OptionError& e) {
      throw std::runtime_error(which + ": " + e.what());
    } catch (const std::logic_error&) {
      break;  // std::stoll's and the readers' refusals: the usual message below
    }
  }
  throw std::runtime_error(where + ": bad option " + std::to_string(option_no) + " (expected " +
                           expected_forms() + ")");
}

}  // namespace sandgate::tenant
