#pragma once
// An authorization server's half of JWT access tokens, for tests: key pairs made with OpenSSL,
// their public JWKs, and compact JWS tokens signed with them (or forged on purpose: any header,
// any claims). Used by the JWT unit tests and by the OAuth tests against the real binary.
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

typedef struct evp_pkey_st EVP_PKEY;

namespace sandgate::test {

struct SigningKey {
  std::shared_ptr<EVP_PKEY> key;
  nlohmann::json jwk;  // the public half, with its kid
};

// Each throws std::runtime_error if OpenSSL fails.
SigningKey rsa_key(const std::string& kid, std::size_t bits = 2048);
SigningKey ec_key(const std::string& kid, const char* curve = "P-256");
SigningKey ed_key(const std::string& kid);

// The JWS signature of `input` as `alg` makes it (ES256: r || s, as JWS carries it).
std::string jws_signature(const std::string& alg, EVP_PKEY* key, const std::string& input);
// base64url(header) "." base64url(claims)
std::string signing_input(const nlohmann::json& header, const nlohmann::json& claims);
// A signed token; the header gets `alg` and, unless it names one, the key's kid.
std::string signed_token(const std::string& alg, const SigningKey& key,
                         const nlohmann::json& claims,
                         nlohmann::json header = nlohmann::json::object());
// {"keys": [...]} of these keys' public JWKs.
nlohmann::json jwk_set_of(std::initializer_list<const SigningKey*> keys);

}  // namespace sandgate::test
