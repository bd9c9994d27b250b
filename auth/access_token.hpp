#pragma once
// What a verified JWT access token (RFC 9068) must say for this server to accept it: the issuer
// exactly (one of those configured), this server's resource URI among its audiences (RFC 8707:
// a token minted for another service is refused — no passthrough, ever), a time window that
// holds now (with a small skew), the scopes this server requires, a `typ` of an access token
// (or none), and a tenant in the configured claim.
#include <chrono>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace sandgate::auth {

struct AccessTokenRules {
  std::vector<std::string> issuers;  // exact `iss` values
  std::string audience;              // this server's resource URI (--resource-url)
  std::vector<std::string> required_scopes;
  std::string tenant_claim = "sub";
  std::chrono::seconds skew{60};
};

enum class ClaimFault {
  none,
  malformed,  // a claim of the wrong type, or `typ` of another kind of JWT
  wrong_issuer,
  wrong_audience,
  expired,             // `exp` missing or past
  not_yet_valid,       // `nbf` (or `iat`) in the future
  insufficient_scope,  // 403, not 401: the token is good, its grant too narrow
  no_tenant,           // the tenant claim is missing, empty or not a string
};

struct AccessToken {
  ClaimFault fault = ClaimFault::none;
  std::string tenant;  // the tenant claim's value, when fault == none
  std::chrono::system_clock::time_point expires;
};

// `header` and `claims` of a JWT whose signature verify_jwt() has checked.
AccessToken check_access_token(const nlohmann::json& header, const nlohmann::json& claims,
                               const AccessTokenRules& rules,
                               std::chrono::system_clock::time_point now);

const char* claim_fault_name(ClaimFault fault);

}  // namespace sandgate::auth
