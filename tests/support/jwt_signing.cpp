#include "tests/support/jwt_signing.hpp"

#include <openssl/core_names.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/rsa.h>

#include <stdexcept>

#include "common/base64.hpp"

namespace sandgate::test {
namespace {

using nlohmann::json;

void require(bool ok, const char* what) {
  if (!ok) throw std::runtime_error(std::string("OpenSSL: ") + what);
}

std::string bn_bytes(EVP_PKEY* key, const char* param, int pad = 0) {
  BIGNUM* bn = nullptr;
  require(EVP_PKEY_get_bn_param(key, param, &bn) == 1, "a key parameter");
  std::string out(pad ? static_cast<std::size_t>(pad) : static_cast<std::size_t>(BN_num_bytes(bn)),
                  '\0');
  if (pad)
    BN_bn2binpad(bn, reinterpret_cast<unsigned char*>(out.data()), pad);
  else
    BN_bn2bin(bn, reinterpret_cast<unsigned char*>(out.data()));
  BN_free(bn);
  return out;
}

}  // namespace

SigningKey rsa_key(const std::string& kid, std::size_t bits) {
  std::shared_ptr<EVP_PKEY> key(EVP_PKEY_Q_keygen(nullptr, nullptr, "RSA", bits), EVP_PKEY_free);
  require(key != nullptr, "RSA key generation");
  json jwk = {{"kty", "RSA"},
              {"kid", kid},
              {"n", base64url_encode(bn_bytes(key.get(), OSSL_PKEY_PARAM_RSA_N))},
              {"e", base64url_encode(bn_bytes(key.get(), OSSL_PKEY_PARAM_RSA_E))}};
  return {key, jwk};
}

SigningKey ec_key(const std::string& kid, const char* curve) {
  std::shared_ptr<EVP_PKEY> key(EVP_PKEY_Q_keygen(nullptr, nullptr, "EC", curve), EVP_PKEY_free);
  require(key != nullptr, "EC key generation");
  int size = std::string(curve) == "P-256" ? 32 : 48;
  json jwk = {{"kty", "EC"},
              {"kid", kid},
              {"crv", curve},
              {"x", base64url_encode(bn_bytes(key.get(), OSSL_PKEY_PARAM_EC_PUB_X, size))},
              {"y", base64url_encode(bn_bytes(key.get(), OSSL_PKEY_PARAM_EC_PUB_Y, size))}};
  return {key, jwk};
}

SigningKey ed_key(const std::string& kid) {
  std::shared_ptr<EVP_PKEY> key(EVP_PKEY_Q_keygen(nullptr, nullptr, "ED25519"), EVP_PKEY_free);
  require(key != nullptr, "Ed25519 key generation");
  std::string x(32, '\0');
  std::size_t length = x.size();
  require(EVP_PKEY_get_raw_public_key(key.get(), reinterpret_cast<unsigned char*>(x.data()),
                                      &length) == 1,
          "an Ed25519 public key");
  return {key, {{"kty", "OKP"}, {"kid", kid}, {"crv", "Ed25519"}, {"x", base64url_encode(x)}}};
}

std::string jws_signature(const std::string& alg, EVP_PKEY* key, const std::string& input) {
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  EVP_PKEY_CTX* key_ctx = nullptr;
  require(EVP_DigestSignInit(ctx.get(), &key_ctx, alg == "EdDSA" ? nullptr : EVP_sha256(), nullptr,
                             key) == 1,
          "signing");
  if (alg == "PS256") {
    require(EVP_PKEY_CTX_set_rsa_padding(key_ctx, RSA_PKCS1_PSS_PADDING) == 1, "PSS padding");
    require(EVP_PKEY_CTX_set_rsa_pss_saltlen(key_ctx, RSA_PSS_SALTLEN_DIGEST) == 1, "PSS salt");
  }
  std::size_t length = 0;
  auto* data = reinterpret_cast<const unsigned char*>(input.data());
  require(EVP_DigestSign(ctx.get(), nullptr, &length, data, input.size()) == 1, "signing");
  std::string out(length, '\0');
  require(EVP_DigestSign(ctx.get(), reinterpret_cast<unsigned char*>(out.data()), &length, data,
                         input.size()) == 1,
          "signing");
  out.resize(length);
  if (alg != "ES256") return out;
  auto* der = reinterpret_cast<const unsigned char*>(out.data());
  ECDSA_SIG* sig = d2i_ECDSA_SIG(nullptr, &der, static_cast<long>(out.size()));
  require(sig != nullptr, "an ECDSA signature");
  std::string raw(64, '\0');
  BN_bn2binpad(ECDSA_SIG_get0_r(sig), reinterpret_cast<unsigned char*>(raw.data()), 32);
  BN_bn2binpad(ECDSA_SIG_get0_s(sig), reinterpret_cast<unsigned char*>(raw.data()) + 32, 32);
  ECDSA_SIG_free(sig);
  return raw;
}

std::string signing_input(const json& header, const json& claims) {
  return base64url_encode(header.dump()) + "." + base64url_encode(claims.dump());
}

std::string signed_token(const std::string& alg, const SigningKey& key, const json& claims,
                         json header) {
  header["alg"] = alg;
  if (!header.contains("kid")) header["kid"] = key.jwk["kid"];
  std::string input = signing_input(header, claims);
  return input + "." + base64url_encode(jws_signature(alg, key.key.get(), input));
}

json jwk_set_of(std::initializer_list<const SigningKey*> keys) {
  json out = {{"keys", json::array()}};
  for (const auto* key : keys) out["keys"].push_back(key->jwk);
  return out;
}

}  // namespace sandgate::test
