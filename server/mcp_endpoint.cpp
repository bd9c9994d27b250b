#include "mcp_endpoint.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/experimental/concurrent_channel.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "auth/authenticate.hpp"
#include "json_dump.hpp"
#include "logging.hpp"
#include "media_type.hpp"
#include "session/session_id.hpp"

namespace sandgate::server {
namespace asio = boost::asio;
using namespace asio::experimental::awaitable_operators;
using nlohmann::json;

namespace {

constexpr const char* kSessionHeader = "Mcp-Session-Id";
constexpr const char* kVersionHeader = "MCP-Protocol-Version";

Reply refuse(const Request& req, http::status status, int code, const std::string& message) {
  return {json_response(status, jsonrpc::error(nullptr, code, message), req.version()), nullptr};
}

Reply accepted(const Request& req) {
  Response res{http::status::accepted, req.version()};
  res.prepare_payload();
  return {std::move(res), nullptr};
}

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

// Owns its arguments (they live in the coroutine frame), so the call may outlive the stream
// that started it: a client that goes away does not cancel a call (spec 2025-11-25).
asio::awaitable<json> answer_detached(McpMethods& methods,
                                      std::shared_ptr<session::Session> session,
                                      jsonrpc::Message message) {
  co_return co_await methods.answer(*session, message);
}

}  // namespace

Response json_response(http::status status, const json& body, unsigned version) {
  Response res{status, version};
  res.set(http::field::content_type, "application/json");
  res.body() = dump_json(body);
  res.prepare_payload();
  return res;
}

McpEndpoint::McpEndpoint(const Config& config, const auth::TokenStore* tokens,
                         session::Registry& registry, Metrics& metrics)
    : config_(config),
      tokens_(tokens),
      registry_(registry),
      metrics_(metrics),
      methods_(ToolLimits{config.timeout_default_s, config.timeout_max_s, config.stdin_max_bytes,
                          config.host.limits.output_bytes},
               metrics),
      forwarder_(config) {}

bool McpEndpoint::origin_allowed(std::string_view origin) const {
  for (const auto& allowed : config_.allowed_origins)
    if (origin == allowed) return true;
  for (std::string_view scheme : {"http://", "https://"}) {
    if (origin.rfind(scheme, 0) == 0)
      return is_loopback_host(host_part(origin.substr(scheme.size())));
  }
  return false;
}

bool McpEndpoint::host_allowed(std::string_view host) const {
  // Behind a non-loopback bind the ingress decides which names reach us.
  if (!is_loopback_host(config_.listen_host)) return true;
  for (const auto& allowed : config_.allowed_hosts)
    if (host == allowed || host_part(host) == allowed) return true;
  return is_loopback_host(host_part(host));
}

std::optional<Reply> McpEndpoint::admit(const Request& head) const {
  std::shared_ptr<const auth::Tenant> tenant;
  return check_head(head, tenant);
}

std::optional<Reply> McpEndpoint::check_head(const Request& req,
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

asio::awaitable<Reply> McpEndpoint::handle(const Request& req) {
  // The connection already ran these rules on the headers alone (admit); they run again here
  // for callers that hand over a whole request (tests, the fuzz target), and they are cheap.
  // Held for the whole request: a tokens reload (SIGHUP) meanwhile does not free the tenant.
  std::shared_ptr<const auth::Tenant> authenticated;
  if (auto refused = check_head(req, authenticated)) co_return std::move(*refused);
  const auth::Tenant& tenant = *authenticated;

  // Another replica's session: it answers (a request already forwarded is never sent on).
  if (req[kForwardedHeader].empty()) {
    if (auto peer = forwarder_.peer_for(req[kSessionHeader]))
      co_return co_await forwarder_.forward(req, *peer);
  }

  if (req.method() == http::verb::post) {
    if (auto refused = check_post_headers(req)) co_return std::move(*refused);
    auto message = jsonrpc::parse(req.body());
    if (message.kind == jsonrpc::Kind::invalid)
      co_return Reply{json_response(http::status::bad_request,
                                    jsonrpc::error(message.id, message.error_code, message.error),
                                    req.version()),
                      nullptr};
    if (message.kind == jsonrpc::Kind::request && message.method == "initialize")
      co_return initialize(req, tenant, message);
    co_return co_await post_to_session(req, tenant, std::move(message));
  }
  std::string id(req[kSessionHeader]);
  if (id.empty())
    co_return refuse(req, http::status::bad_request, jsonrpc::server_error,
                     "Bad Request: Mcp-Session-Id header is required");
  if (auto v = req[kVersionHeader]; !v.empty() && !is_supported_protocol_version(std::string(v)))
    co_return refuse(req, http::status::bad_request, jsonrpc::server_error,
                     "Bad Request: unsupported MCP-Protocol-Version");
  if (req.method() == http::verb::get) {
    // No server-initiated messages exist for an execute-only server, so there is no standalone
    // stream to offer; the spec allows 405 here, and clients fall back to POST responses.
    if (!registry_.find(id, tenant.name))
      co_return refuse(req, http::status::not_found, jsonrpc::server_error, "Session not found");
    Reply r = refuse(req, http::status::method_not_allowed, jsonrpc::server_error,
                     "Method not allowed: this server sends no messages outside responses");
    r.response.set(http::field::allow, "POST, DELETE");
    co_return r;
  }
  // DELETE: the session and its sandbox end now.
  if (!session::looks_like_session_id(id) || !registry_.remove(id, tenant.name))
    co_return refuse(req, http::status::not_found, jsonrpc::server_error, "Session not found");
  log_event(LogLevel::info, "session_deleted",
            {{"session", std::string(session::log_prefix(id))}, {"tenant", tenant.name}});
  Response res{http::status::ok, req.version()};
  res.prepare_payload();
  co_return Reply{std::move(res), nullptr};
}

std::optional<Reply> McpEndpoint::check_post_headers(const Request& req) const {
  if (!is_json_content_type(req[http::field::content_type]))
    return refuse(req, http::status::unsupported_media_type, jsonrpc::server_error,
                  "Unsupported Media Type: Content-Type must be application/json");
  auto accept = req[http::field::accept];
  if (!lists(accept, "application/json") || !lists(accept, "text/event-stream"))
    return refuse(req, http::status::not_acceptable, jsonrpc::server_error,
                  "Not Acceptable: Accept must list both application/json and text/event-stream");
  return std::nullopt;
}

Reply McpEndpoint::initialize(const Request& req, const auth::Tenant& tenant,
                              const jsonrpc::Message& message) {
  json answer = methods_.initialize(message);
  if (answer.contains("error"))
    return {json_response(http::status::ok, answer, req.version()), nullptr};
  auto created = registry_.create(
      {tenant.name, tenant.max_sessions, tenant.spend_cap_usd, tenant.max_concurrent_calls});
  if (auto* refusal = std::get_if<session::CreateRefusal>(&created)) {
    metrics_.count_session_refused();
    bool per_tenant = *refusal == session::CreateRefusal::too_many_for_tenant;
    std::string why = per_tenant
                          ? "this tenant has its maximum number of sessions open; end one (DELETE) "
                            "or wait for idle ones to expire"
                          : "the gateway has its maximum number of sessions open; try again later";
    Reply r{json_response(
                per_tenant ? http::status::too_many_requests : http::status::service_unavailable,
                jsonrpc::error(message.id, jsonrpc::server_error, "Too many sessions: " + why),
                req.version()),
            nullptr};
    r.response.set(http::field::retry_after, "30");
    return r;
  }
  auto session = std::get<std::shared_ptr<session::Session>>(created);
  metrics_.count_session_created();
  log_event(
      LogLevel::info, "session_created",
      {{"session", std::string(session::log_prefix(session->id()))}, {"tenant", tenant.name}});
  Reply r{json_response(http::status::ok, answer, req.version()), nullptr};
  r.response.set(kSessionHeader, session->id());
  return r;
}

asio::awaitable<Reply> McpEndpoint::post_to_session(const Request& req, const auth::Tenant& tenant,
                                                    jsonrpc::Message message) {
  std::string id(req[kSessionHeader]);
  if (id.empty())
    co_return refuse(req, http::status::bad_request, jsonrpc::server_error,
                     "Bad Request: Mcp-Session-Id header is required (send initialize first)");
  if (auto v = req[kVersionHeader]; !v.empty() && !is_supported_protocol_version(std::string(v)))
    co_return refuse(req, http::status::bad_request, jsonrpc::server_error,
                     "Bad Request: unsupported MCP-Protocol-Version " + std::string(v));
  auto session = session::looks_like_session_id(id) ? registry_.find(id, tenant.name) : nullptr;
  if (!session)
    co_return refuse(req, http::status::not_found, jsonrpc::server_error,
                     "Session not found: it ended or expired; initialize a new one");
  session->touch();
  if (message.kind == jsonrpc::Kind::notification) {
    methods_.notify(*session, message);
    co_return accepted(req);
  }
  if (message.kind == jsonrpc::Kind::response) co_return accepted(req);

  const json& meta =
      message.params.is_object() ? message.params.value("_meta", json::object()) : json::object();
  if (message.method == "tools/call" && meta.is_object() && meta.contains("progressToken"))
    co_return stream_tool_call(req, session, std::move(message));
  json answer = co_await methods_.answer(*session, message);
  if (answer.is_null()) co_return accepted(req);  // cancelled: no response
  co_return Reply{json_response(http::status::ok, answer, req.version()), nullptr};
}

// A tools/call that asked for progress: the response is an event stream carrying progress
// notifications while the program runs, then the result.
Reply McpEndpoint::stream_tool_call(const Request& req, std::shared_ptr<session::Session> session,
                                    jsonrpc::Message message) {
  Response head{http::status::ok, req.version()};
  head.set(http::field::content_type, "text/event-stream");
  head.set(http::field::cache_control, "no-cache");
  auto interval = config_.progress_interval;
  auto stream = [this, session, message = std::move(message),
                 interval](EventSink& sink) -> asio::awaitable<void> {
    using Done = asio::experimental::concurrent_channel<void(boost::system::error_code, json)>;
    auto executor = co_await asio::this_coro::executor;
    auto done = std::make_shared<Done>(executor, 1);
    asio::co_spawn(executor, answer_detached(methods_, session, message),
                   [done](std::exception_ptr error, json answer) {
                     if (error)
                       answer = jsonrpc::error(nullptr, jsonrpc::internal_error, "internal error");
                     done->try_send(boost::system::error_code{}, std::move(answer));
                   });
    if (!co_await sink.prime()) co_return;
    json token = message.params["_meta"]["progressToken"];
    auto started = std::chrono::steady_clock::now();
    asio::steady_timer tick(executor);
    for (;;) {
      tick.expires_after(interval);
      auto which = co_await (done->async_receive(asio::as_tuple(asio::use_awaitable)) ||
                             tick.async_wait(asio::as_tuple(asio::use_awaitable)));
      if (which.index() == 0) {
        json answer = std::get<1>(std::get<0>(which));
        if (!answer.is_null()) co_await sink.send(answer);
        co_return;
      }
      auto elapsed = std::chrono::duration_cast<std::chrono::seconds>(
                         std::chrono::steady_clock::now() - started)
                         .count();
      json progress = jsonrpc::notification(
          "notifications/progress", {{"progressToken", token},
                                     {"progress", elapsed},
                                     {"message", "running for " + std::to_string(elapsed) + " s"}});
      if (!co_await sink.send(progress)) co_return;  // the call goes on; its result is dropped
    }
  };
  return {std::move(head), std::move(stream)};
}

}  // namespace sandgate::server
