#include "router.hpp"

#include "common/logging.hpp"
#include "responses.hpp"

namespace sandgate::server {

Router::Router(Endpoint& mcp, Metrics& metrics, GaugeSource gauges)
    : mcp_(mcp), metrics_(metrics), gauges_(std::move(gauges)) {}

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

namespace {
// Every answer made here is plain text.
Response plain(const Request& request, http::status status, std::string body,
               const char* content_type = "text/plain; charset=utf-8") {
  return plain_response(request, status, std::move(body), content_type);
}
std::string_view path_of(const Request& request) {
  std::string_view target = request.target();
  return target.substr(0, target.find('?'));
}
bool read_only(const Request& request) {
  return request.method() == http::verb::get || request.method() == http::verb::head;
}
}  // namespace

void Router::serve_document(std::string path, std::string content_type, std::string body) {
  documents_[std::move(path)] = Document{std::move(content_type), std::move(body)};
}

const Router::Document* Router::document_at(std::string_view path) const {
  auto it = documents_.find(path);
  return it == documents_.end() ? nullptr : &it->second;
}

boost::asio::awaitable<std::optional<Response>> Router::admit(const Request& head) const {
  if (path_of(head) == "/mcp") co_return co_await mcp_.admit(head);
  bool preflight = head.method() == http::verb::options && document_at(path_of(head));
  if (!read_only(head) && !preflight)
    co_return plain(head, http::status::method_not_allowed, "GET only\n");
  co_return std::nullopt;
}

boost::asio::awaitable<Reply> Router::route(const Request& request,
                                            std::shared_ptr<CancelSignal> client) {
  std::string_view target = path_of(request);
  if (target == "/mcp") {
    try {
      co_return co_await mcp_.handle(request, std::move(client));
    } catch (const std::exception& e) {
      log_event(LogLevel::error, "internal_error", {{"what", e.what()}});
    }
    // A JSON-RPC error without an id (-32603): the shape every MCP client reads.
    co_return Reply{json_response(http::status::internal_server_error,
                                  {{"jsonrpc", "2.0"},
                                   {"id", nullptr},
                                   {"error", {{"code", -32603}, {"message", "Internal error"}}}},
                                  request.version()),
                    nullptr};
  }
  if (const Document* document = document_at(target)) {
    // Public, so that a browser-based MCP client can read it from its own origin.
    Response res =
        request.method() == http::verb::options
            ? plain(request, http::status::no_content, "")
            : plain(request, http::status::ok, document->body, document->content_type.c_str());
    res.set(http::field::access_control_allow_origin, "*");
    if (request.method() == http::verb::options) {
      res.set(http::field::access_control_allow_methods, "GET, OPTIONS");
      res.set(http::field::access_control_allow_headers, "*");
      res.set(http::field::access_control_max_age, "86400");
    }
    co_return Reply{std::move(res), nullptr};
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
