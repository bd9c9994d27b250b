#include "auth/jwt.hpp"

#include <openssl/bn.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/rsa.h>

#include <memory>
#include <optional>

#include "common/base64.hpp"
#include "common/bounded_json.hpp"

namespace sandgate::auth {
namespace {

using json = nlohmann::json;

struct Algorithm {
  const char* name;
  KeyType key_type;
  const EVP_MD* (*digest)();  // null for EdDSA (the signature hashes itself)
  bool pss;
};

const EVP_MD* no_digest() {
  return nullptr;
}

// The allow-list. Anything else — `none`, HS256/384/512, RS384, ES384, ES256K … — is refused.
constexpr Algorithm kAlgorithms[] = {
    {"RS256", KeyType::rsa, EVP_sha256, false},
    {"PS256", KeyType::rsa, EVP_sha256, true},
    {"ES256", KeyType::ec_p256, EVP_sha256, false},
    {"EdDSA", KeyType::ed25519, no_digest, false},
};

const Algorithm* algorithm_named(const std::string& name) {
  for (const auto& a : kAlgorithms)
    if (name == a.name) return &a;
  return nullptr;
}

std::optional<json> json_object_part(std::string_view part) {
  auto bytes = base64url_decode(part);
  if (!bytes) return std::nullopt;
  auto parsed = parse_bounded_json(*bytes, 16);
  if (parsed.fault != JsonFault::none || !parsed.value.is_object()) return std::nullopt;
  return std::move(parsed.value);
}

// JWS carries an ECDSA signature as r || s (32 bytes each for P-256); OpenSSL wants DER.
std::optional<std::string> ecdsa_der(const std::string& raw) {
  if (raw.size() != 64) return std::nullopt;
  auto* bytes = reinterpret_cast<const unsigned char*>(raw.data());
  BIGNUM* r = BN_bin2bn(bytes, 32, nullptr);
  BIGNUM* s = BN_bin2bn(bytes + 32, 32, nullptr);
  ECDSA_SIG* sig = ECDSA_SIG_new();
  if (!r || !s || !sig || ECDSA_SIG_set0(sig, r, s) != 1) {
    BN_free(r);
    BN_free(s);
    ECDSA_SIG_free(sig);
    return std::nullopt;
  }
  unsigned char* der = nullptr;
  int length = i2d_ECDSA_SIG(sig, &der);
  ECDSA_SIG_free(sig);  // owns r and s now
  if (length <= 0) return std::nullopt;
  std::string out(reinterpret_cast<char*>(der), static_cast<std::size_t>(length));
  OPENSSL_free(der);
  return out;
}

bool signature_holds(const Algorithm& alg, EVP_PKEY* key, std::string_view signed_part,
                     std::string signature) {
  if (alg.key_type == KeyType::ec_p256) {
    auto der = ecdsa_der(signature);
    if (!der) return false;
    signature = std::move(*der);
  }
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  EVP_PKEY_CTX* key_ctx = nullptr;
  if (!ctx || EVP_DigestVerifyInit(ctx.get(), &key_ctx, alg.digest(), nullptr, key) != 1)
    return false;
  if (alg.pss && (EVP_PKEY_CTX_set_rsa_padding(key_ctx, RSA_PKCS1_PSS_PADDING) != 1 ||
                  EVP_PKEY_CTX_set_rsa_pss_saltlen(key_ctx, RSA_PSS_SALTLEN_DIGEST) != 1))
    return false;
  return EVP_DigestVerify(
             ctx.get(), reinterpret_cast<const unsigned char*>(signature.data()), signature.size(),
             reinterpret_cast<const unsigned char*>(signed_part.data()), signed_part.size()) == 1;
}

// The key the token names: by `kid`; without one, the only key of the algorithm's type.
const VerificationKey* key_for(const JwkSet& keys, const json& header, const Algorithm& alg,
                               JwtFault& fault) {
  auto kid = header.find("kid");
  if (kid != header.end() && !kid->is_string()) {
    fault = JwtFault::malformed;
    return nullptr;
  }
  const VerificationKey* found = nullptr;
  std::size_t candidates = 0;
  for (const auto& key : keys.keys) {
    if (kid != header.end()) {
      if (key.kid != kid->get_ref<const std::string&>()) continue;
    } else if (key.type != alg.key_type || (!key.alg.empty() && key.alg != alg.name)) {
      continue;
    }
    found = &key;
    ++candidates;
  }
  if (!found) {
    fault = JwtFault::unknown_key;
    return nullptr;
  }
  // Two keys of one kid, or several unnamed keys to choose from: never guess.
  if (candidates > 1 || found->type != alg.key_type ||
      (!found->alg.empty() && found->alg != alg.name)) {
    fault = JwtFault::key_mismatch;
    return nullptr;
  }
  return found;
}

}  // namespace

std::optional<DecodedJwt> decode_jwt(std::string_view token) {
  if (token.size() > kMaxJwtBytes) return std::nullopt;
  auto first = token.find('.');
  auto second = first == std::string_view::npos ? first : token.find('.', first + 1);
  if (second == std::string_view::npos || token.find('.', second + 1) != std::string_view::npos)
    return std::nullopt;
  auto header = json_object_part(token.substr(0, first));
  auto claims = json_object_part(token.substr(first + 1, second - first - 1));
  auto signature = base64url_decode(token.substr(second + 1));
  if (!header || !claims || !signature) return std::nullopt;
  return DecodedJwt{std::move(*header), std::move(*claims), token.substr(0, second),
                    std::move(*signature)};
}

VerifiedJwt verify_jwt(DecodedJwt decoded, const JwkSet& keys) {
  VerifiedJwt out;
  out.fault = JwtFault::malformed;
  const json& header = decoded.header;
  // A header that asks for more than a plain signature (`crit`, an embedded or fetched key) is
  // not followed: keys come from the issuer's published set only.
  for (const char* refused : {"crit", "jwk", "jku", "x5u", "x5c"})
    if (header.contains(refused)) return out;
  auto alg_it = header.find("alg");
  const Algorithm* alg = alg_it != header.end() && alg_it->is_string()
                             ? algorithm_named(alg_it->get<std::string>())
                             : nullptr;
  if (!alg) {
    out.fault = JwtFault::unsupported_alg;
    return out;
  }
  const VerificationKey* key = key_for(keys, header, *alg, out.fault);
  if (!key) return out;
  if (!signature_holds(*alg, key->key.get(), decoded.signed_part, std::move(decoded.signature))) {
    out.fault = JwtFault::bad_signature;
    return out;
  }
  out.fault = JwtFault::none;
  out.header = std::move(decoded.header);
  out.claims = std::move(decoded.claims);
  return out;
}

VerifiedJwt verify_jwt(std::string_view token, const JwkSet& keys) {
  auto decoded = decode_jwt(token);
  if (!decoded) return VerifiedJwt{JwtFault::malformed, {}, {}};
  return verify_jwt(std::move(*decoded), keys);
}

const char* jwt_fault_name(JwtFault fault) {
  switch (fault) {
    case JwtFault::none:
      return "ok";
    case JwtFault::malformed:
      return "malformed";
    case JwtFault::unsupported_alg:
      return "algorithm";
    case JwtFault::unknown_key:
      return "unknown_key";
    case JwtFault::key_mismatch:
      return "key_mismatch";
    case JwtFault::bad_signature:
      return "signature";
  }
  return "malformed";
}

}  // namespace sandgate::auth
