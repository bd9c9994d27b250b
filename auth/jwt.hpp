#pragma once
// A compact JWS (RFC 7515) checked against a JWK Set: its shape, its algorithm (an allow-list:
// RS256, PS256, ES256, EdDSA — never `none`, never an HMAC, so a public key can never serve as a
// shared secret), the key it names (by `kid`; used only with its own type and, if the key says
// one, its own `alg`), and its signature. What the claims mean is access_token.hpp's.
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "auth/jwk_set.hpp"

namespace sandgate::auth {

enum class JwtFault {
  none,
  malformed,        // not three base64url parts of JSON objects, or too large
  unsupported_alg,  // `alg` missing or not on the allow-list (none, HS256 …)
  unknown_key,      // no key of the set has this `kid` (a refetch of the set may find it)
  key_mismatch,     // the key named is of another type, or is for another `alg`
  bad_signature,
};

struct VerifiedJwt {
  JwtFault fault = JwtFault::none;
  nlohmann::json header;  // both set only when fault == none
  nlohmann::json claims;
};

// Access tokens are small; anything larger is refused before it is decoded.
constexpr std::size_t kMaxJwtBytes = 16 * 1024;

// A token's parts, decoded but not verified: enough to choose whose keys to verify it with.
struct DecodedJwt {
  nlohmann::json header;
  nlohmann::json claims;
  std::string_view signed_part;  // into the token: it must outlive this
  std::string signature;
};
// nullopt when the token is not three base64url parts of JSON objects, or is too large.
std::optional<DecodedJwt> decode_jwt(std::string_view token);

VerifiedJwt verify_jwt(DecodedJwt decoded, const JwkSet& keys);
VerifiedJwt verify_jwt(std::string_view token, const JwkSet& keys);

// For logs and metrics: a word per fault ("signature", "unknown_key" …).
const char* jwt_fault_name(JwtFault fault);

}  // namespace sandgate::auth
