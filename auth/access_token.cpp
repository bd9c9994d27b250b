#include "auth/access_token.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <optional>
#include <sstream>

namespace sandgate::auth {
namespace {

using json = nlohmann::json;
using Clock = std::chrono::system_clock;

// A NumericDate claim (seconds since the epoch), when present and sane; `bad` when present and
// not a finite number within any plausible range.
std::optional<Clock::time_point> numeric_date(const json& claims, const char* name, bool& bad) {
  auto it = claims.find(name);
  if (it == claims.end()) return std::nullopt;
  if (!it->is_number()) {
    bad = true;
    return std::nullopt;
  }
  double seconds = it->get<double>();
  // Years 1970 to ~2255: far enough for any token, and no overflow in the conversion.
  if (!std::isfinite(seconds) || seconds < 0 || seconds > 9e9) {
    bad = true;
    return std::nullopt;
  }
  return Clock::time_point(std::chrono::seconds(static_cast<std::int64_t>(seconds)));
}

// RFC 9068 `typ`: an access token's, or (many issuers) plain "JWT", or none. An ID token or a
// logout token carries another.
bool access_token_type(const json& header) {
  auto typ = header.find("typ");
  if (typ == header.end()) return true;
  if (!typ->is_string()) return false;
  std::string value = typ->get<std::string>();
  std::transform(value.begin(), value.end(), value.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return value == "at+jwt" || value == "application/at+jwt" || value == "jwt";
}

bool has_audience(const json& claims, const std::string& audience, bool& bad) {
  auto aud = claims.find("aud");
  if (aud == claims.end()) return false;
  if (aud->is_string()) return *aud == audience;
  if (!aud->is_array()) {
    bad = true;
    return false;
  }
  return std::any_of(aud->begin(), aud->end(),
                     [&](const json& one) { return one.is_string() && one == audience; });
}

// The scopes granted: RFC 9068's space-separated `scope`, or the `scp` array some issuers use.
std::vector<std::string> granted_scopes(const json& claims) {
  std::vector<std::string> out;
  if (auto scope = claims.find("scope"); scope != claims.end() && scope->is_string()) {
    std::istringstream words(scope->get<std::string>());
    for (std::string word; words >> word;) out.push_back(word);
  }
  if (auto scp = claims.find("scp"); scp != claims.end() && scp->is_array())
    for (const auto& one : *scp)
      if (one.is_string()) out.push_back(one.get<std::string>());
  return out;
}

}  // namespace

AccessToken check_access_token(const json& header, const json& claims,
                               const AccessTokenRules& rules, Clock::time_point now) {
  AccessToken out;
  auto fail = [&](ClaimFault fault) {
    out.fault = fault;
    return out;
  };
  if (!access_token_type(header)) return fail(ClaimFault::malformed);
  auto iss = claims.find("iss");
  if (iss == claims.end() || !iss->is_string() ||
      std::find(rules.issuers.begin(), rules.issuers.end(), iss->get<std::string>()) ==
          rules.issuers.end())
    return fail(ClaimFault::wrong_issuer);
  bool bad = false;
  if (!has_audience(claims, rules.audience, bad))
    return fail(bad ? ClaimFault::malformed : ClaimFault::wrong_audience);
  auto exp = numeric_date(claims, "exp", bad);
  auto nbf = numeric_date(claims, "nbf", bad);
  auto iat = numeric_date(claims, "iat", bad);
  if (bad) return fail(ClaimFault::malformed);
  // An access token without an expiry would be good forever: refused.
  if (!exp || *exp + rules.skew <= now) return fail(ClaimFault::expired);
  if ((nbf && *nbf - rules.skew > now) || (iat && *iat - rules.skew > now))
    return fail(ClaimFault::not_yet_valid);
  auto granted = granted_scopes(claims);
  for (const auto& needed : rules.required_scopes)
    if (std::find(granted.begin(), granted.end(), needed) == granted.end())
      return fail(ClaimFault::insufficient_scope);
  auto tenant = claims.find(rules.tenant_claim);
  if (tenant == claims.end() || !tenant->is_string() ||
      tenant->get_ref<const std::string&>().empty())
    return fail(ClaimFault::no_tenant);
  out.tenant = tenant->get<std::string>();
  out.expires = *exp;
  return out;
}

const char* claim_fault_name(ClaimFault fault) {
  switch (fault) {
    case ClaimFault::none:
      return "ok";
    case ClaimFault::malformed:
      return "malformed";
    case ClaimFault::wrong_issuer:
      return "issuer";
    case ClaimFault::wrong_audience:
      return "audience";
    case ClaimFault::expired:
      return "expired";
    case ClaimFault::not_yet_valid:
      return "not_yet_valid";
    case ClaimFault::insufficient_scope:
      return "scope";
    case ClaimFault::no_tenant:
      return "tenant";
  }
  return "malformed";
}

}  // namespace sandgate::auth
