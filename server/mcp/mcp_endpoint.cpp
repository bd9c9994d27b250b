#include "mcp_endpoint.hpp"

#include "replies.hpp"
#include "session_header.hpp"

namespace sandgate::server {
namespace asio = boost::asio;

McpEndpoint::McpEndpoint(const Config& config, const auth::TokenStore* tokens,
                         session::Registry& registry, const ToolRegistry& tools, Metrics& metrics)
    : admission_(config, tokens, metrics),
      forwarder_(config),
      sessions_(registry, tools, metrics) {}

std::optional<Response> McpEndpoint::admit(const Request& head) const {
  std::shared_ptr<const auth::Tenant> tenant;
  if (auto refused = admission_.check_head(head, tenant)) return std::move(refused->response);
  return std::nullopt;
}

asio::awaitable<Reply> McpEndpoint::handle(const Request& req,
                                           std::shared_ptr<ClientWatch> client) {
  // The connection already ran these rules on the headers alone (admit); they run again here
  // for callers that hand over a whole request (tests, the fuzz target), and they are cheap.
  std::shared_ptr<const auth::Tenant> tenant;
  if (auto refused = admission_.check_head(req, tenant)) co_return std::move(*refused);

  SessionHeader header = session_header(req);
  // Another replica's session: it answers (a request already forwarded is never sent on).
  if (req[kForwardedHeader].empty()) {
    if (auto peer = forwarder_.peer_for(header.id))
      co_return co_await forwarder_.forward(req, *peer);
  }

  if (req.method() == http::verb::post) {
    if (auto refused = admission_.check_post_headers(req)) co_return std::move(*refused);
    auto message = jsonrpc::parse(req.body());
    if (message.kind == jsonrpc::Kind::invalid)
      co_return refuse(req, http::status::bad_request, message.error_code, message.error, nullptr,
                       message.id);
    if (message.kind == jsonrpc::Kind::request && message.method == "initialize")
      co_return sessions_.initialize(req, *tenant, message);
    co_return co_await sessions_.post(req, header, tenant, std::move(message), client);
  }
  if (!header.present)
    co_return refuse(req, http::status::bad_request, jsonrpc::server_error,
                     "Bad Request: Mcp-Session-Id header is required");
  if (req.method() == http::verb::get) co_return sessions_.get(req, header, *tenant);
  co_return sessions_.remove(req, header, *tenant);
}

}  // namespace sandgate::server
