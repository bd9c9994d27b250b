#include "auth/jwk_set.hpp"

#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/param_build.h>

#include <optional>

#include "common/base64.hpp"
#include "common/bounded_json.hpp"

namespace sandgate::auth {
namespace {

using json = nlohmann::json;

template <class T, void (*Free)(T*)>
struct Deleter {
  void operator()(T* p) const { Free(p); }
};
using ParamBuild = std::unique_ptr<OSSL_PARAM_BLD, Deleter<OSSL_PARAM_BLD, OSSL_PARAM_BLD_free>>;
using Params = std::unique_ptr<OSSL_PARAM, Deleter<OSSL_PARAM, OSSL_PARAM_free>>;
using Bignum = std::unique_ptr<BIGNUM, Deleter<BIGNUM, BN_free>>;
using KeyContext = std::unique_ptr<EVP_PKEY_CTX, Deleter<EVP_PKEY_CTX, EVP_PKEY_CTX_free>>;

std::shared_ptr<EVP_PKEY> owned(EVP_PKEY* key) {
  return key ? std::shared_ptr<EVP_PKEY>(key, EVP_PKEY_free) : nullptr;
}

// A base64url member of the JWK, decoded; nothing when absent or not base64url.
std::optional<std::string> member(const json& jwk, const char* name) {
  auto it = jwk.find(name);
  if (it == jwk.end() || !it->is_string()) return std::nullopt;
  return base64url_decode(it->get_ref<const std::string&>());
}

Bignum bignum(const std::string& big_endian) {
  return Bignum(BN_bin2bn(reinterpret_cast<const unsigned char*>(big_endian.data()),
                          static_cast<int>(big_endian.size()), nullptr));
}

// A public key from OSSL_PARAMs ("RSA" or "EC").
std::shared_ptr<EVP_PKEY> from_params(const char* kind, const OSSL_PARAM* params) {
  KeyContext ctx(EVP_PKEY_CTX_new_from_name(nullptr, kind, nullptr));
  EVP_PKEY* key = nullptr;
  if (!ctx || EVP_PKEY_fromdata_init(ctx.get()) <= 0 ||
      EVP_PKEY_fromdata(ctx.get(), &key, EVP_PKEY_PUBLIC_KEY, const_cast<OSSL_PARAM*>(params)) <= 0)
    return nullptr;
  return owned(key);
}

std::shared_ptr<EVP_PKEY> rsa_key(const json& jwk) {
  auto n = member(jwk, "n"), e = member(jwk, "e");
  if (!n || !e || n->empty() || e->empty() || e->size() > 8) return nullptr;
  // A modulus with leading zero bytes is not minimal: its bit count is what counts.
  Bignum modulus = bignum(*n), exponent = bignum(*e);
  if (!modulus || !exponent || BN_num_bits(modulus.get()) < static_cast<int>(kMinRsaBits) ||
      BN_num_bits(modulus.get()) > 16384)
    return nullptr;
  // An even exponent, or one below 3, is no RSA public key (e = 1 would verify anything).
  if (!BN_is_odd(exponent.get()) || BN_cmp(exponent.get(), BN_value_one()) <= 0) return nullptr;
  ParamBuild build(OSSL_PARAM_BLD_new());
  if (!build || !OSSL_PARAM_BLD_push_BN(build.get(), OSSL_PKEY_PARAM_RSA_N, modulus.get()) ||
      !OSSL_PARAM_BLD_push_BN(build.get(), OSSL_PKEY_PARAM_RSA_E, exponent.get()))
    return nullptr;
  Params params(OSSL_PARAM_BLD_to_param(build.get()));
  return params ? from_params("RSA", params.get()) : nullptr;
}

std::shared_ptr<EVP_PKEY> ec_p256_key(const json& jwk, const std::string& crv) {
  if (crv != "P-256") return nullptr;
  auto x = member(jwk, "x"), y = member(jwk, "y");
  if (!x || !y || x->size() != 32 || y->size() != 32) return nullptr;
  std::string point = "\x04" + *x + *y;  // uncompressed SEC1 point
  ParamBuild build(OSSL_PARAM_BLD_new());
  if (!build ||
      !OSSL_PARAM_BLD_push_utf8_string(build.get(), OSSL_PKEY_PARAM_GROUP_NAME, "prime256v1", 0) ||
      !OSSL_PARAM_BLD_push_octet_string(build.get(), OSSL_PKEY_PARAM_PUB_KEY, point.data(),
                                        point.size()))
    return nullptr;
  Params params(OSSL_PARAM_BLD_to_param(build.get()));
  // fromdata checks that the point is on the curve.
  return params ? from_params("EC", params.get()) : nullptr;
}

std::shared_ptr<EVP_PKEY> ed25519_key(const json& jwk, const std::string& crv) {
  if (crv != "Ed25519") return nullptr;
  auto x = member(jwk, "x");
  if (!x || x->size() != 32) return nullptr;
  return owned(EVP_PKEY_new_raw_public_key(
      EVP_PKEY_ED25519, nullptr, reinterpret_cast<const unsigned char*>(x->data()), x->size()));
}

// The key a JWK describes, when it is a public signature key of a kind kept here.
std::optional<VerificationKey> verification_key(const json& jwk) {
  if (!jwk.is_object()) return std::nullopt;
  // A private member means the issuer published a private key: nothing of it is trusted.
  for (const char* secret : {"d", "p", "q", "dp", "dq", "qi", "k"})
    if (jwk.contains(secret)) return std::nullopt;
  if (jwk.contains("use") && jwk["use"] != "sig") return std::nullopt;
  auto text = [&](const char* name) {
    auto it = jwk.find(name);
    return it != jwk.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  VerificationKey out;
  out.kid = text("kid");
  out.alg = text("alg");
  const std::string kty = text("kty");
  if (kty == "RSA") {
    out.type = KeyType::rsa;
    out.key = rsa_key(jwk);
  } else if (kty == "EC") {
    out.type = KeyType::ec_p256;
    out.key = ec_p256_key(jwk, text("crv"));
  } else if (kty == "OKP") {
    out.type = KeyType::ed25519;
    out.key = ed25519_key(jwk, text("crv"));
  }
  if (!out.key) return std::nullopt;
  return out;
}

}  // namespace

JwkSet parse_jwk_set(std::string_view document, std::string& problem) {
  JwkSet set;
  auto parsed = parse_bounded_json(document, 8);
  if (parsed.fault != JsonFault::none || !parsed.value.is_object()) {
    problem = "the JWK Set is not a JSON object";
    return set;
  }
  auto keys = parsed.value.find("keys");
  if (keys == parsed.value.end() || !keys->is_array()) {
    problem = "the JWK Set has no \"keys\" array";
    return set;
  }
  if (keys->size() > kMaxJwks) {
    problem = "the JWK Set holds more than " + std::to_string(kMaxJwks) + " keys";
    return set;
  }
  for (const auto& jwk : *keys) {
    if (auto key = verification_key(jwk))
      set.keys.push_back(std::move(*key));
    else
      ++set.skipped;
  }
  return set;
}

}  // namespace sandgate::auth
