#include "admission.hpp"

#include "auth/authenticate.hpp"
#include "common/logging.hpp"
#include "jsonrpc_replies.hpp"
#include "server/http/http_config.hpp"
#include "server/http/media_type.hpp"

namespace sandgate::server {
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

// "host:port", "[::1]:port" or "host" -> host; "" when what follows the host is not a port
// ("[::1].evil.example", "127.0.0.1:80@evil").
std::string_view host_part(std::string_view authority) {
  std::string_view host, rest;
  if (!authority.empty() && authority.front() == '[') {
    auto close = authority.find(']');
    if (close == std::string_view::npos) return {};
    host = authority.substr(0, close + 1);  // brackets kept: is_loopback_host takes them off
    rest = authority.substr(close + 1);
  } else {
    host = authority.substr(0, authority.find(':'));
    rest = authority.substr(host.size());
  }
  if (rest.empty()) return host;
  if (rest.front() != ':' || rest.size() > 6) return {};
  for (char c : rest.substr(1))
    if (c < '0' || c > '9') return {};
  return host;
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

std::optional<Reply> Admission::check_head(const Request& req,
                                           std::shared_ptr<const auth::Tenant>& tenant) const {
  // DNS rebinding: a browser page of another origin must not drive a local gateway.
  if (auto origin = req[http::field::origin]; !origin.empty() && !origin_allowed(origin))
    return refuse(req, http::status::forbidden, jsonrpc::server_error,
                  "Forbidden: origin not allowed");
  if (!host_allowed(req[http::field::host]))
    return refuse(req, http::status::forbidden, jsonrpc::server_error,
                  "Forbidden: host not allowed");

  auto auth = auth::authenticate(tokens_, req[http::field::authorization], req["X-MCP-AUTH"]);
  if (auth.status != auth::AuthStatus::ok) {
    metrics_.count_auth_failure();
    log_event(LogLevel::warn, "auth_failed",
              {{"reason", auth.status == auth::AuthStatus::missing ? "missing" : "invalid"}});
    Reply r = refuse(req, http::status::unauthorized, -32001,
                     "Unauthorized: send a valid token as 'Authorization: Bearer <token>' or "
                     "'X-MCP-AUTH: <token>'");
    r.response.set(http::field::www_authenticate, "Bearer realm=\"sandgate\"");
    return r;
  }
  tenant = auth.tenant;
  if (req.method() != http::verb::post && req.method() != http::verb::get &&
      req.method() != http::verb::delete_) {
    Reply r =
        refuse(req, http::status::method_not_allowed, jsonrpc::server_error, "Method not allowed");
    r.response.set(http::field::allow, "GET, POST, DELETE");
    return r;
  }
  return std::nullopt;
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
