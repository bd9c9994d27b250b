#include "router.hpp"

#include "jsonrpc.hpp"
#include "logging.hpp"

namespace sandgate::server {

Router::Router(McpEndpoint& endpoint, Metrics& metrics, GaugeSource gauges)
    : endpoint_(endpoint), metrics_(metrics), gauges_(std::move(gauges)) {}

void Router::set_not_ready_reason(std::string reason) {
  std::lock_guard lock(mutex_);
  not_ready_reason_ = std::move(reason);
}

void Router::set_degraded_notes(std::vector<std::string> notes) {
  std::string text;
  for (const auto& note : notes) text += "degraded: " + note + "\n";
  std::lock_guard lock(mutex_);
  degraded_ = std::move(text);
}

Response Router::plain(const Request& request, http::status status, std::string body,
                       const char* content_type) {
  Response res{status, request.version()};
  res.set(http::field::content_type, content_type);
  res.body() = std::move(body);
  res.prepare_payload();
  return res;
}

namespace {
std::string_view path_of(const Request& request) {
  std::string_view target = request.target();
  return target.substr(0, target.find('?'));
}
bool read_only(const Request& request) {
  return request.method() == http::verb::get || request.method() == http::verb::head;
}
}  // namespace

std::optional<Response> Router::admit(const Request& head) const {
  if (path_of(head) == "/mcp") {
    if (auto refused = endpoint_.admit(head)) return std::move(refused->response);
    return std::nullopt;
  }
  if (!read_only(head)) return plain(head, http::status::method_not_allowed, "GET only\n");
  return std::nullopt;
}

boost::asio::awaitable<Reply> Router::route(const Request& request) {
  std::string_view target = path_of(request);
  if (target == "/mcp") {
    try {
      co_return co_await endpoint_.handle(request);
    } catch (const std::exception& e) {
      log_event(LogLevel::error, "internal_error", {{"what", e.what()}});
    }
    co_return Reply{
        json_response(http::status::internal_server_error,
                      jsonrpc::error(nullptr, jsonrpc::internal_error, "Internal error"),
                      request.version()),
        nullptr};
  }
  if (!read_only(request))
    co_return Reply{plain(request, http::status::method_not_allowed, "GET only\n"), nullptr};
  if (target == "/healthz") co_return Reply{plain(request, http::status::ok, "ok\n"), nullptr};
  if (target == "/readyz") {
    auto [reason, degraded] = [&] {
      std::lock_guard lock(mutex_);
      return std::pair(not_ready_reason_, degraded_);
    }();
    if (ready_ && !stopping_)
      co_return Reply{plain(request, http::status::ok, "ready\n" + degraded), nullptr};
    if (stopping_) reason = "shutting down";
    co_return Reply{
        plain(request, http::status::service_unavailable, "not ready: " + reason + "\n" + degraded),
        nullptr};
  }
  if (target == "/metrics") {
    Gauges g = gauges_();
    g.ready = ready_;
    co_return Reply{
        plain(request, http::status::ok, metrics_.render(g), "text/plain; version=0.0.4"), nullptr};
  }
  co_return Reply{plain(request, http::status::not_found, "Not found. The MCP endpoint is /mcp.\n"),
                  nullptr};
}

}  // namespace sandgate::server
