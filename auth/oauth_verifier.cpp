#include "auth/oauth_verifier.hpp"

#include <algorithm>
#include <fstream>
#include <stdexcept>

#include "auth/jwt.hpp"
#include "auth/opaque_token.hpp"
#include "common/tenant_name.hpp"

namespace sandgate::auth {
namespace asio = boost::asio;
using Clock = std::chrono::system_clock;

namespace {
// The gateway's client secret for the introspection endpoint: one line of a file the operator
// keeps (a Kubernetes Secret), never the command line.
std::string read_client_secret(const std::string& path) {
  std::ifstream file(path);
  std::string secret;
  if (!file || !std::getline(file, secret))
    throw std::runtime_error("cannot read --oauth-client-secret-file");
  while (!secret.empty() && (secret.back() == '\r' || secret.back() == ' ')) secret.pop_back();
  if (secret.empty()) throw std::runtime_error("--oauth-client-secret-file is empty");
  return secret;
}
}  // namespace

OAuthVerifier::OAuthVerifier(const OAuthConfig& config, const Tenant& defaults,
                             RefreshObserver observer,
                             std::function<void(const std::string&)> introspection_observer)
    : config_(config),
      fetcher_(config.ca_file),
      introspection_observer_(introspection_observer ? std::move(introspection_observer)
                                                     : [](const std::string&) {}),
      introspection_gate_(config.introspection_rate),
      policy_(
          std::make_shared<const OAuthPolicy>(OAuthPolicy::load(config.policy_file, defaults))) {
  if (!config.introspection_url.empty())
    introspection_ = std::make_unique<TokenIntrospection>(
        config.introspection_url, config.client_id, read_client_secret(config.client_secret_file),
        fetcher_);
  rules_.issuers = config.issuers;
  rules_.audience = config.resource_url;
  rules_.required_scopes = config.scopes;
  rules_.tenant_claim = config.tenant_claim;
  for (const auto& issuer : config.issuers) {
    issuers_.push_back(std::make_unique<IssuerKeys>(issuer, fetcher_, observer));
    tenant_prefixes_.push_back(oauth_tenant_name(issuer, ""));
  }
}

bool OAuthVerifier::looks_like_jwt(std::string_view token) {
  auto first = token.find('.');
  if (first == std::string_view::npos) return false;
  auto second = token.find('.', first + 1);
  return second != std::string_view::npos && token.find('.', second + 1) == std::string_view::npos;
}

IssuerKeys* OAuthVerifier::issuer_of(const nlohmann::json& claims) {
  auto iss = claims.find("iss");
  if (iss == claims.end() || !iss->is_string()) return nullptr;
  for (auto& issuer : issuers_)
    if (issuer->issuer() == iss->get_ref<const std::string&>()) return issuer.get();
  return nullptr;
}

std::shared_ptr<const Tenant> OAuthVerifier::tenant(const std::string& name) const {
  std::shared_ptr<const OAuthPolicy> policy;
  {
    std::lock_guard lock(mutex_);
    policy = policy_;
  }
  return policy->tenant(name);
}

OAuthCheck OAuthVerifier::check(std::string_view token, Clock::time_point now) {
  OAuthCheck out;
  const Digest digest = sha256(token);
  {
    std::lock_guard lock(mutex_);
    if (const Verified* known = verified_.find(digest, now)) {
      out.verdict = OAuthVerdict::ok;
      out.kind = known->kind;
      out.outcome = "ok";
      out.tenant = policy_->tenant(known->tenant_name);
      return out;
    }
    // The introspection endpoint refused it a moment ago: not asked again for a while.
    if (const OAuthCheck* refused = refused_.find(digest, now)) return *refused;
  }
  if (!looks_like_jwt(token)) {
    out.kind = "introspection";
    if (!introspection_)
      return refusal(out, "malformed", "the access token is not a well-formed JWT");
    // Never a question for what no authorization server issues (RFC 6750 §2.1).
    if (!plausible_opaque_token(token))
      return refusal(out, "malformed",
                     "the access token is neither a JWT nor an opaque token (letters, digits "
                     "and '-._~+/' then '='s, at most " +
                         std::to_string(kMaxOpaqueTokenBytes) + " bytes)");
    out.verdict = OAuthVerdict::introspection_needed;
    return out;
  }
  auto decoded = decode_jwt(token);
  if (!decoded) return refusal(out, "malformed", "the access token is not a well-formed JWT");
  IssuerKeys* issuer = issuer_of(decoded->claims);
  if (!issuer) return refusal(out, "issuer", "the access token's issuer is not trusted here");
  auto keys = issuer->current();
  auto issued_at = claims_iat(decoded->claims);
  auto verified = verify_jwt(std::move(*decoded), *keys);
  if (verified.fault == JwtFault::unknown_key) {
    out.verdict = OAuthVerdict::keys_needed;
    out.issuer = issuer;
    out.issued_at = issued_at;
    return refusal(out, "unknown_key",
                   "the access token is signed with a key its issuer does not publish");
  }
  if (verified.fault != JwtFault::none)
    return refusal(out, jwt_fault_name(verified.fault),
                   "the access token's signature does not hold");
  // Checked again, against the keys then published, after kMaxKeyAge at the latest.
  return judge_claims(out, verified.header, verified.claims, digest, now, kMaxKeyAge);
}

std::optional<Clock::time_point> OAuthVerifier::claims_iat(const nlohmann::json& claims) {
  auto iat = claims.find("iat");
  if (iat == claims.end() || !iat->is_number()) return std::nullopt;
  double seconds = iat->get<double>();
  if (!(seconds >= 0 && seconds < 9e9)) return std::nullopt;
  return Clock::time_point(std::chrono::seconds(static_cast<std::int64_t>(seconds)));
}

OAuthCheck OAuthVerifier::refusal(OAuthCheck out, const char* outcome, std::string description) {
  out.outcome = outcome;
  out.description = std::move(description);
  return out;
}

OAuthCheck OAuthVerifier::deferral(OAuthCheck out, const char* outcome, std::string description) {
  out.verdict = OAuthVerdict::unavailable;
  return refusal(std::move(out), outcome, std::move(description));
}

OAuthCheck OAuthVerifier::judge_claims(OAuthCheck out, const nlohmann::json& header,
                                       const nlohmann::json& claims, const Digest& digest,
                                       Clock::time_point now, std::chrono::seconds remember_for) {
  auto checked = check_access_token(header, claims, rules_, now);
  switch (checked.fault) {
    case ClaimFault::none:
      break;
    case ClaimFault::insufficient_scope:
      out.verdict = OAuthVerdict::insufficient_scope;
      return refusal(out, "scope", "the access token lacks a required scope");
    case ClaimFault::expired:
      return refusal(out, "expired", "the access token has expired");
    case ClaimFault::not_yet_valid:
      return refusal(out, "not_yet_valid", "the access token is not valid yet");
    case ClaimFault::wrong_audience:
      return refusal(
          out, "audience",
          "the access token was not issued for this resource (" + config_.resource_url + ")");
    case ClaimFault::wrong_issuer:
      return refusal(out, "issuer", "the access token's issuer is not trusted here");
    case ClaimFault::no_tenant:
      return refusal(out, "tenant", "the access token has no '" + config_.tenant_claim + "' claim");
    case ClaimFault::malformed:
      return refusal(out, "malformed", "the access token's claims are malformed");
  }
  if (!is_usable_tenant_claim(checked.tenant))
    return refusal(out, "tenant",
                   "the access token's '" + config_.tenant_claim +
                       "' claim is not usable as a tenant (at most " +
                       std::to_string(kMaxTenantClaimBytes) +
                       " printable ASCII characters, no spaces, quotes or backslashes)");
  // check_access_token held `iss` to the configured issuers.
  std::string name = oauth_tenant_name(claims["iss"].get<std::string>(), checked.tenant);
  if (name.size() > kMaxTenantNameBytes)
    return refusal(out, "tenant",
                   "the access token's '" + config_.tenant_claim +
                       "' claim is too long: with its issuer a tenant name is at most " +
                       std::to_string(kMaxTenantNameBytes) + " bytes");
  {
    std::lock_guard lock(mutex_);
    verified_.remember(digest, {name, out.kind}, std::min(checked.expires, now + remember_for));
  }
  out.verdict = OAuthVerdict::ok;
  out.outcome = "ok";
  out.tenant = tenant(name);
  return out;
}

void OAuthVerifier::remember_refusal(const Digest& digest, const OAuthCheck& refused,
                                     Clock::time_point now) {
  OAuthCheck kept = refused;
  kept.tenant.reset();
  kept.issuer = nullptr;
  std::lock_guard lock(mutex_);
  refused_.remember(digest, std::move(kept), now + kIntrospectionMemory);
}

asio::awaitable<OAuthCheck> OAuthVerifier::check_fetching(std::string token,
                                                          asio::any_io_executor executor) {
  auto out = check(token, Clock::now());
  if (out.verdict == OAuthVerdict::ok) {
    // Keys past their age are fetched again without holding this request.
    for (auto& issuer : issuers_)
      if (issuer->stale()) issuer->refresh_in_background(executor);
    co_return out;
  }
  if (out.verdict == OAuthVerdict::introspection_needed)
    co_return co_await introspect(token, executor);
  if (out.verdict != OAuthVerdict::keys_needed) co_return out;
  IssuerKeys* issuer = out.issuer;
  auto refreshed = co_await issuer->refresh_for_unknown_key(executor);
  out = check(token, Clock::now());
  if (out.verdict != OAuthVerdict::keys_needed) co_return out;
  // The keys were fetched for another unknown key moments ago. A token issued since (give or
  // take the skew) may use a key published since: not "invalid" (the client would drop a token
  // that may be good) but "come back shortly". One issued before that fetch began had its key
  // published before it, so the fetch would have found it: refused, as a withdrawn key's are —
  // however often others send unknown keys.
  if (!refreshed.asked && !refreshed.failed) {
    if (out.issued_at && *out.issued_at + rules_.skew > refreshed.keys_as_of)
      co_return deferral(out, "keys_rate_limited",
                         "the issuer's keys were fetched moments ago without this token's key; "
                         "try again in a few seconds");
    out.verdict = OAuthVerdict::invalid;
    co_return out;
  }
  // The issuer could not be asked (down, slow, its answer unusable): the same.
  if (refreshed.failed)
    co_return deferral(out, "keys_unavailable",
                       "the issuer's signing keys cannot be fetched now; try again shortly");
  // Asked, and it does not publish that key: refused.
  out.verdict = OAuthVerdict::invalid;
  co_return out;
}

asio::awaitable<OAuthCheck> OAuthVerifier::introspect(const std::string& token,
                                                      asio::any_io_executor executor) {
  OAuthCheck out;
  out.kind = "introspection";
  // Held until the answer comes: at most so many questions a second, and so many unanswered.
  auto entry = introspection_gate_.enter();
  if (!entry.pass) {
    out = deferral(out, entry.busy ? "introspection_busy" : "introspection_rate_limited",
                   "the authorization server is being asked about many new tokens; try again "
                   "in a moment");
    out.retry_after = entry.retry_after;
    out.held_back = true;
    co_return out;
  }
  auto answer = co_await introspection_->introspect(token, executor);
  auto now = Clock::now();
  if (!answer.answered) {
    introspection_observer_(answer.problem);
    co_return deferral(out, "introspection_unavailable",
                       "the authorization server cannot be asked about this token now; try "
                       "again shortly");
  }
  const Digest digest = sha256(token);
  if (!answer.active) {
    // Remembered as refused for a while: a flood of made-up tokens does not become a flood
    // of questions to the authorization server.
    out = refusal(out, "inactive", "the access token is not active");
    remember_refusal(digest, out, now);
    co_return out;
  }
  // An active token is asked about again after kIntrospectionMemory: a revocation at the
  // authorization server reaches this gateway within that time. Its refusal (an audience,
  // a scope, a tenant claim) stands as long: asking again would change nothing.
  out =
      judge_claims(out, nlohmann::json::object(), answer.claims, digest, now, kIntrospectionMemory);
  if (out.verdict != OAuthVerdict::ok) remember_refusal(digest, out, now);
  co_return out;
}

void OAuthVerifier::prefetch(asio::any_io_executor executor) {
  for (auto& issuer : issuers_) issuer->refresh_in_background(executor);
}

std::shared_ptr<const Tenant> OAuthVerifier::tenant_named(const std::string& name) const {
  for (const auto& prefix : tenant_prefixes_)
    if (name.size() > prefix.size() && name.compare(0, prefix.size(), prefix) == 0 &&
        is_usable_tenant_claim(std::string_view(name).substr(prefix.size())))
      return tenant(name);
  return nullptr;
}

bool OAuthVerifier::policy_names(const std::string& name) const {
  std::lock_guard lock(mutex_);
  return policy_->names(name);
}

void OAuthVerifier::replace_policy(OAuthPolicy policy) {
  auto fresh = std::make_shared<const OAuthPolicy>(std::move(policy));
  std::lock_guard lock(mutex_);
  policy_ = std::move(fresh);
}

}  // namespace sandgate::auth
