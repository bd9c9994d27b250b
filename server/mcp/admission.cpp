#include "admission.hpp"

#include <boost/asio/this_coro.hpp>
#include <string>
#include <string_view>
#include <variant>

#include "auth/authenticate.hpp"
#include "common/host_port.hpp"
#include "common/logging.hpp"
#include "common/loopback.hpp"
#include "jsonrpc_replies.hpp"
#include "server/http/http_config.hpp"
#include "server/http/media_type.hpp"

namespace sandgate::server {
namespace asio = boost::asio;
namespace {

bool lists(std::string_view header, std::string_view type) {
  // Accept lists media types separated by commas, each maybe with parameters.
  std::size_t pos = 0;
  while (pos <= header.size()) {
    auto end = header.find(',', pos);
    auto item =
        header.substr(pos, end == std::string_view::npos ? std::string_view::npos : end - pos);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    auto semi = item.find(';');
    item = item.substr(0, semi);
    while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
    if (item == type || item == "*/*") return true;
    if (end == std::string_view::npos) break;
    pos = end + 1;
  }
  return false;
}

// "host:port", "[::1]:port" or "host" -> host, an IPv6 literal in brackets (as --allowed-hosts
// writes it); "" when the authority is not host[:port] ("[::1].evil.example",
// "127.0.0.1:80@evil", "localhost:"): then no name matches it and it is not loopback.
std::string host_part(std::string_view authority) {
  auto split = split_host_port(authority);
  auto* parts = std::get_if<HostPort>(&split);
  if (parts == nullptr) return {};
  return bracket_host(parts->host);
}

}  // namespace

bool Admission::origin_allowed(std::string_view origin) const {
  for (const auto& allowed : origins_.allowed_origins)
    if (origin == allowed) return true;
  for (std::string_view scheme : {"http://", "https://"}) {
    if (origin.rfind(scheme, 0) == 0)
      return is_loopback_host(host_part(origin.substr(scheme.size())));
  }
  return false;
}

bool Admission::host_allowed(std::string_view host) const {
  // Behind a non-loopback bind the ingress decides which names reach us.
  if (!listening_on_loopback_) return true;
  for (const auto& allowed : origins_.allowed_hosts)
    if (host == allowed || host_part(host) == allowed) return true;
  return is_loopback_host(host_part(host));
}

Admission::Admission(OriginPolicy origins, bool listening_on_loopback,
                     const auth::TokenStore* tokens, auth::OAuthVerifier* oauth, Metrics& metrics)
    : origins_(std::move(origins)),
      listening_on_loopback_(listening_on_loopback),
      tokens_(tokens),
      oauth_(oauth),
      challenge_(oauth ? AuthChallenge(oauth->config()) : AuthChallenge()),
      metrics_(metrics) {}

std::optional<Reply> Admission::check_origin_and_host(const Request& req) const {
  // DNS rebinding: a browser page of another origin must not drive a local gateway.
  if (auto origin = req[http::field::origin]; !origin.empty() && !origin_allowed(origin))
    return refuse(req, http::status::forbidden, jsonrpc::server_error,
                  "Forbidden: origin not allowed");
  if (!host_allowed(req[http::field::host]))
    return refuse(req, http::status::forbidden, jsonrpc::server_error,
                  "Forbidden: host not allowed");
  return std::nullopt;
}

asio::awaitable<std::optional<Reply>> Admission::check_head(
    const Request& req, std::shared_ptr<const auth::Tenant>& tenant, bool count_ok) const {
  if (auto refused = check_origin_and_host(req)) co_return refused;
  if (auto refused = co_await check_credentials(req, tenant, count_ok)) co_return refused;
  if (req.method() != http::verb::post && req.method() != http::verb::get &&
      req.method() != http::verb::delete_) {
    Reply r =
        refuse(req, http::status::method_not_allowed, jsonrpc::server_error, "Method not allowed");
    r.response.set(http::field::allow, "GET, POST, DELETE");
    co_return r;
  }
  co_return std::nullopt;
}

Reply Admission::unauthorized(const Request& req, const char* outcome, const char* error,
                              const std::string& description) const {
  metrics_.count_auth_failure();
  log_event(LogLevel::warn, "auth_failed", {{"reason", outcome}});
  std::string message =
      challenge_.oauth()
          ? "Unauthorized: send an OAuth access token for this server (its metadata: " +
                challenge_.metadata_url() +
                ") or a token of its tokens file, as 'Authorization: "
                "Bearer <token>'"
          : "Unauthorized: send a valid token as 'Authorization: Bearer <token>' or "
            "'X-MCP-AUTH: <token>'";
  if (!description.empty()) message += " (" + description + ")";
  Reply r = refuse(req, http::status::unauthorized, -32001, message);
  r.response.set(http::field::www_authenticate, challenge_.header(error, description));
  return r;
}

asio::awaitable<std::optional<Reply>> Admission::check_credentials(
    const Request& req, std::shared_ptr<const auth::Tenant>& tenant, bool count_ok) const {
  if (auto refused = refuse_token_in_url(req)) co_return refused;
  auto authorization = req[http::field::authorization];
  auto found = auth::authenticate(*tokens_, authorization, req["X-MCP-AUTH"]);
  if (found.status == auth::AuthStatus::ok) {
    if (count_ok) metrics_.count_auth("static", "ok");
    tenant = std::move(found.tenant);
    co_return std::nullopt;
  }
  if (found.status == auth::AuthStatus::missing) {
    metrics_.count_auth("none", "missing");
    co_return unauthorized(req, "missing", "", "");
  }
  std::string_view token = auth::bearer_token(authorization);
  if (token.empty() && req["X-MCP-AUTH"].empty()) {
    // Another scheme (Basic …): RFC 6750 §3.1 — no error code, only the challenge.
    metrics_.count_auth("none", "scheme");
    co_return unauthorized(req, "scheme", "", "");
  }
  if (!oauth_ || !oauth_->judges(token)) {
    metrics_.count_auth("static", "unknown");
    co_return unauthorized(req, "invalid", "invalid_token", "");
  }
  // Named, not made in the call: g++ 12 mishandles temporaries in a coroutine's arguments.
  std::string presented(token);
  auto executor = co_await asio::this_coro::executor;
  auto check = co_await oauth_->check_fetching(std::move(presented), executor);
  if (check.verdict == auth::OAuthVerdict::ok) {
    if (count_ok) metrics_.count_auth(check.kind, "ok");
    tenant = std::move(check.tenant);
    co_return std::nullopt;
  }
  metrics_.count_auth(check.kind, check.outcome);
  co_return refuse_oauth(req, check);
}

std::optional<Reply> Admission::refuse_token_in_url(const Request& req) const {
  // RFC 6750 §2.3 would allow a token in the URL; MCP does not (URLs end up in logs).
  std::string_view target = req.target();
  auto query = target.find('?');
  if (query == std::string_view::npos || (target.find("?access_token=", query) != query &&
                                          target.find("&access_token=", query) == target.npos))
    return std::nullopt;
  metrics_.count_auth_failure();
  log_event(LogLevel::warn, "auth_failed", {{"reason", "token_in_url"}});
  Reply r = refuse(req, http::status::bad_request, -32001,
                   "Bad request: an access token goes in the Authorization header, never in "
                   "the URL");
  r.response.set(http::field::www_authenticate,
                 challenge_.header("invalid_request", "token in the URL"));
  return r;
}

// A token the OAuth verifier judged and did not accept (its outcome already counted).
Reply Admission::refuse_oauth(const Request& req, const auth::OAuthCheck& check) const {
  if (check.verdict == auth::OAuthVerdict::unavailable) {
    log_event(check.held_back ? LogLevel::debug : LogLevel::warn, "auth_deferred",
              {{"reason", check.outcome}});
    Reply r = refuse(req, http::status::service_unavailable, jsonrpc::server_error,
                     "Service unavailable: " + check.description);
    r.response.set(http::field::retry_after, std::to_string(check.retry_after.count()));
    return r;
  }
  if (check.verdict != auth::OAuthVerdict::insufficient_scope)
    return unauthorized(req, check.outcome, "invalid_token", check.description);
  metrics_.count_auth_failure();
  log_event(LogLevel::warn, "auth_failed", {{"reason", "scope"}});
  Reply r = refuse(req, http::status::forbidden, -32001, "Forbidden: " + check.description);
  r.response.set(http::field::www_authenticate,
                 challenge_.header("insufficient_scope", check.description));
  return r;
}

std::optional<Reply> Admission::check_content_type(const Request& req) const {
  if (!is_json_content_type(req[http::field::content_type]))
    return refuse(req, http::status::unsupported_media_type, jsonrpc::server_error,
                  "Unsupported Media Type: Content-Type must be application/json");
  return std::nullopt;
}

std::optional<Reply> Admission::check_accept(const Request& req) const {
  auto accept = req[http::field::accept];
  if (!lists(accept, "application/json") || !lists(accept, "text/event-stream"))
    return refuse(req, http::status::not_acceptable, jsonrpc::server_error,
                  "Not Acceptable: Accept must list both application/json and text/event-stream");
  return std::nullopt;
}

}  // namespace sandgate::server
