// Fuzz target: what an OAuth resource server reads from others. The first byte picks the input:
//   'J' — an issuer's JWK Set, "\n\n", then a bearer token: the set is parsed as hostile input
//         and the token verified against it; a made-up token never verifies (a fuzzer cannot
//         forge a signature), whatever the keys;
//   'C' — a token's claims: decoded and checked against fixed rules, unverified, without a crash
//         and with a verdict that names a fault or a usable tenant;
//   'P' — an OAuth policy file: refused with a message naming its line, or every tenant it
//         yields keeps the name asked for.
#include <chrono>
#include <cstdlib>
#include <stdexcept>
#include <string>

#include "auth/access_token.hpp"
#include "auth/jwk_set.hpp"
#include "auth/jwt.hpp"
#include "auth/oauth_policy.hpp"
#include "common/bounded_json.hpp"

using namespace sandgate::auth;

namespace {

void key_set_and_token(std::string_view input) {
  auto split = input.find("\n\n");
  std::string_view document = input.substr(0, split);
  std::string_view token = split == std::string_view::npos ? "" : input.substr(split + 2);
  std::string problem;
  JwkSet keys = parse_jwk_set(document, problem);
  if (!problem.empty() && !keys.keys.empty()) std::abort();  // refused whole means empty
  if (keys.keys.size() > kMaxJwks) std::abort();
  for (const auto& key : keys.keys)
    if (!key.key) std::abort();
  auto verified = verify_jwt(token, keys);
  if (verified.fault == JwtFault::none) std::abort();
  if (!verified.claims.is_null() || !verified.header.is_null()) std::abort();
}

void claims(std::string_view input) {
  auto parsed = sandgate::parse_bounded_json(input, 16);
  if (parsed.fault != sandgate::JsonFault::none || !parsed.value.is_object()) return;
  AccessTokenRules rules;
  rules.issuers = {"https://issuer.test"};
  rules.audience = "https://sandgate.test/mcp";
  rules.required_scopes = {"sandgate:execute"};
  auto checked = check_access_token(nlohmann::json::object(), parsed.value, rules,
                                    std::chrono::system_clock::now());
  if (checked.fault == ClaimFault::none) {
    if (checked.tenant.empty()) std::abort();
    // A token that passes holds this resource among its audiences and is not expired.
    if (checked.expires + rules.skew <= std::chrono::system_clock::now()) std::abort();
  }
  (void)claim_fault_name(checked.fault);
  if (is_usable_tenant_claim(checked.tenant))
    (void)oauth_tenant_name("https://issuer.test", checked.tenant);
}

void policy(std::string_view input) {
  try {
    auto parsed = OAuthPolicy::parse(input);
    auto tenant = parsed.tenant("issuer.test#someone");
    if (!tenant || tenant->name != "issuer.test#someone") std::abort();
  } catch (const std::runtime_error& e) {
    if (std::string_view(e.what()).rfind("OAuth policy file line ", 0) != 0) std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  std::string_view input(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0]) {
    case 'J':
      key_set_and_token(input);
      break;
    case 'C':
      claims(input);
      break;
    case 'P':
      policy(input);
      break;
  }
  return 0;
}
