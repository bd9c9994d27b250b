#pragma once
// The OAuth half of authentication: a bearer token that is a JWT access token of a configured
// issuer is verified with that issuer's keys (never another's: the set is chosen by the
// token's `iss`, then the signature must hold with it), its claims checked (access_token.hpp),
// and its tenant named from the tenant claim, with limits from the OAuth policy.
//
// Verified tokens are remembered (by SHA-256, never the token) until they expire, for at most
// kMaxKeyAge, so a client's later requests cost a digest and a lookup instead of a signature
// check; a key the issuer withdraws stops a token it signed within that time.
//
// Opaque tokens (with an introspection endpoint) cost the authorization server a question each,
// and anyone can make one up: only a plausible token is asked about (opaque_token.hpp), the
// questions are capped gateway-wide (introspection_gate.hpp), and every answer — active,
// inactive or refused — is remembered for kIntrospectionMemory. Refusals are remembered apart
// from verified tokens, so made-up tokens never push a client's good token out.
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "auth/access_token.hpp"
#include "auth/introspection_gate.hpp"
#include "auth/issuer_keys.hpp"
#include "auth/oauth_config.hpp"
#include "auth/oauth_policy.hpp"
#include "auth/token_introspection.hpp"
#include "auth/token_memory.hpp"

namespace sandgate::auth {

enum class OAuthVerdict {
  ok,
  invalid,               // 401 error="invalid_token"
  insufficient_scope,    // 403 error="insufficient_scope"
  keys_needed,           // decided only after the issuer's keys are fetched (again)
  introspection_needed,  // an opaque token: decided only after the introspection endpoint answers
  unavailable,  // not judged now (keys or introspection out of reach, or the introspection cap):
                // 503, try again after retry_after (not the token's fault)
};

struct OAuthCheck {
  OAuthVerdict verdict = OAuthVerdict::invalid;
  const char* kind = "jwt";              // or "introspection": how the token was judged
  std::shared_ptr<const Tenant> tenant;  // set when ok
  // One word for metrics and logs: "ok", "expired", "audience", "signature", "unknown_key" …
  const char* outcome = "malformed";
  // For error_description: what the client can act on, never the token or its claims.
  std::string description;
  IssuerKeys* issuer = nullptr;                                    // set when keys_needed
  std::optional<std::chrono::system_clock::time_point> issued_at;  // its `iat`, when keys_needed
  std::chrono::seconds retry_after{10};                            // when unavailable
  // Unavailable by the introspection cap: expected under load (counted, logged at debug only,
  // so that anyone sending made-up tokens cannot flood the log).
  bool held_back = false;
};

// More verified tokens than this are not remembered (the least recently used go first).
constexpr std::size_t kMaxRememberedTokens = 20000;
// Nor more refused opaque tokens than this (apart: they never push a verified one out).
constexpr std::size_t kMaxRefusedTokens = 10000;
// How long an introspection's answer stands, active or not (RFC 7662 §4: a revoked token must
// not stay good for long; a made-up one must not make the gateway ask again and again).
constexpr std::chrono::seconds kIntrospectionMemory{60};

class OAuthVerifier {
 public:
  // Throws std::runtime_error when the policy file, the CA file or the client secret file cannot
  // be used. `introspection_observer` hears why the introspection endpoint could not be asked.
  // Each OAuth tenant starts from `defaults` (the gateway's), then its policy line.
  OAuthVerifier(const OAuthConfig& config, const Tenant& defaults, RefreshObserver observer,
                std::function<void(const std::string& problem)> introspection_observer = {});

  // Whether a bearer token is shaped like a JWT (three dot-separated parts).
  static bool looks_like_jwt(std::string_view token);
  // Whether this verifier judges such a token: a JWT, or any other non-empty token with
  // introspection (an implausible one is refused without a question).
  bool judges(std::string_view token) const {
    return looks_like_jwt(token) || (introspection_ != nullptr && !token.empty());
  }
  // With the keys known now; keys_needed when the issuer's keys lack the token's key and may be
  // fetched again.
  OAuthCheck check(std::string_view token, std::chrono::system_clock::time_point now);
  // check(), fetching the keys first when needed (once).
  boost::asio::awaitable<OAuthCheck> check_fetching(std::string token,
                                                    boost::asio::any_io_executor executor);
  // Fetches every issuer's keys in the background (at start: the first token needs no wait).
  void prefetch(boost::asio::any_io_executor executor);

  // The tenant of this name with its current limits, when it is one of ours (a restarted
  // gateway's saved sessions name tenants); null otherwise.
  std::shared_ptr<const Tenant> tenant_named(const std::string& name) const;
  // Whether the policy file has a line of the tenant's own (the operator named it).
  bool policy_names(const std::string& name) const;
  // A new policy (SIGHUP). Tokens already verified take the new limits at their next request.
  void replace_policy(OAuthPolicy policy);

  const OAuthConfig& config() const { return config_; }

 private:
  struct Verified {
    std::string tenant_name;
    const char* kind;
  };
  IssuerKeys* issuer_of(const nlohmann::json& claims);
  static OAuthCheck refusal(OAuthCheck out, const char* outcome, std::string description);
  static std::optional<std::chrono::system_clock::time_point> claims_iat(
      const nlohmann::json& claims);
  // Not judged now (503, try again): the keys or the introspection endpoint are out of reach.
  static OAuthCheck deferral(OAuthCheck out, const char* outcome, std::string description);
  // The claims of a verified JWT, or an introspection's answer, against the rules; remembered
  // for at most `remember_for` when they hold.
  OAuthCheck judge_claims(OAuthCheck out, const nlohmann::json& header,
                          const nlohmann::json& claims, const Digest& digest,
                          std::chrono::system_clock::time_point now,
                          std::chrono::seconds remember_for);
  boost::asio::awaitable<OAuthCheck> introspect(const std::string& token,
                                                boost::asio::any_io_executor executor);
  std::shared_ptr<const Tenant> tenant(const std::string& name) const;
  // An introspection's refusal, remembered as it was (verdict, outcome, description).
  void remember_refusal(const Digest& digest, const OAuthCheck& refused,
                        std::chrono::system_clock::time_point now);

  const OAuthConfig config_;
  AccessTokenRules rules_;
  HttpsFetcher fetcher_;
  std::vector<std::unique_ptr<IssuerKeys>> issuers_;
  std::unique_ptr<TokenIntrospection> introspection_;  // with --oauth-introspection-url
  std::function<void(const std::string&)> introspection_observer_;
  std::vector<std::string> tenant_prefixes_;  // oauth_tenant_name(issuer, "")
  IntrospectionGate introspection_gate_;

  mutable std::mutex mutex_;
  std::shared_ptr<const OAuthPolicy> policy_;
  TokenMemory<Verified> verified_{kMaxRememberedTokens};
  TokenMemory<OAuthCheck> refused_{kMaxRefusedTokens};
};

}  // namespace sandgate::auth
