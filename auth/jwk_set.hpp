#pragma once
// An authorization server's signing keys (RFC 7517 JWK Set, from its `jwks_uri`), read as
// hostile input: only public signature keys of the kinds an access token may be verified with
// are kept — RSA of at least 2048 bits (RS256, PS256), EC P-256 (ES256), OKP Ed25519 (EdDSA).
// Private members, other curves, encryption keys and malformed entries are skipped (and
// counted), never trusted.
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

typedef struct evp_pkey_st EVP_PKEY;

namespace sandgate::auth {

enum class KeyType { rsa, ec_p256, ed25519 };

struct VerificationKey {
  std::string kid;  // may be empty
  std::string alg;  // the JWK's own `alg`, when it names one: the key serves only that
  KeyType type = KeyType::rsa;
  std::shared_ptr<EVP_PKEY> key;
};

struct JwkSet {
  std::vector<VerificationKey> keys;
  std::size_t skipped = 0;  // entries not kept (unknown kind, private, malformed)
};

// More keys than any real issuer publishes at once (rotation keeps two or three).
constexpr std::size_t kMaxJwks = 64;
constexpr std::size_t kMinRsaBits = 2048;

// The usable keys of a JWK Set document; `problem` says why a document is refused whole (not
// JSON, no `keys` array, too many keys), and the set is then empty.
JwkSet parse_jwk_set(std::string_view document, std::string& problem);

}  // namespace sandgate::auth
