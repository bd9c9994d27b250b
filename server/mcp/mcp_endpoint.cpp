#include "mcp_endpoint.hpp"

#include "jsonrpc_replies.hpp"
#include "server/tools/file_resources.hpp"
#include "session/session_id.hpp"
#include "session_header.hpp"
#include "tasks_extension.hpp"

namespace sandgate::server {
namespace asio = boost::asio;

namespace {

constexpr const char* kInstructions =
    "Use the execute tool to run Python, JavaScript or bash in an isolated sandbox with no "
    "network. Files in /work persist across calls in the same sandbox: without a session, pass "
    "back the sandbox_id a result returns. end_sandbox ends one.";

// The sandbox handle a tools/call names, from its arguments, or the task a tasks/* request
// names ("" when none): the replica that holds it answers the request. For resources/read, the
// key of its URI, which names the replica that minted it the same way.
std::string handle_named(const jsonrpc::Message& message) {
  if (!message.params.is_object()) return {};
  if (message.method == "resources/read" && message.params.contains("uri") &&
      message.params["uri"].is_string()) {
    std::string key = file_uri_key(message.params["uri"].get<std::string>());
    return session::looks_like_session_id(key) ? key : std::string();
  }
  if (is_task_method_2026(message.method)) {
    auto id = message.params.find("taskId");
    if (id == message.params.end() || !id->is_string()) return {};
    std::string task = id->get<std::string>();
    return session::looks_like_task_id(task) ? task : std::string();
  }
  if (message.method != "tools/call") return {};
  auto args = message.params.find("arguments");
  if (args == message.params.end() || !args->is_object()) return {};
  auto id = args->find("sandbox_id");
  if (id == args->end() || !id->is_string()) return {};
  std::string handle = id->get<std::string>();
  return session::looks_like_handle(handle) ? handle : std::string();
}

}  // namespace

McpEndpoint::McpEndpoint(const McpEndpointConfig& config, const auth::TokenStore* tokens,
                         auth::OAuthVerifier* oauth, session::Registry& registry,
                         const ToolRegistry& tools, Metrics& metrics, MethodExtension* extension)
    : admission_(config.origins, config.listening_on_loopback, tokens, oauth, metrics),
      forwarder_(config),
      tasks_(config.tasks, config.replica_name),
      sessions_(registry, tools, metrics, extension, &tasks_),
      stateless_(tools, extension, kInstructions),
      metrics_(metrics) {
  stateless_.offer_tasks(&tasks_);
}

asio::awaitable<std::optional<Response>> McpEndpoint::admit(const Request& head) {
  std::shared_ptr<const auth::Tenant> tenant;
  if (auto refused = co_await admission_.check_head(head, tenant, false))
    co_return std::move(refused->response);
  co_return std::nullopt;
}

asio::awaitable<Reply> McpEndpoint::handle(const Request& req,
                                           std::shared_ptr<CancelSignal> client) {
  // The connection already ran these rules on the headers alone (admit); they run again here
  // for callers that hand over a whole request (tests, the fuzz target), and they are cheap (a
  // verified OAuth token is remembered by its digest).
  std::shared_ptr<const auth::Tenant> tenant;
  if (auto refused = co_await admission_.check_head(req, tenant, true))
    co_return std::move(*refused);
  SessionHeader header = session_header(req);

  if (req.method() != http::verb::post) {
    if (auto relayed = co_await forward_to_owner(req, owner_of(req, header.id), client))
      co_return std::move(*relayed);
    if (!header.present) {
      // Without a session there is nothing to stream or delete (2026-07-28 has neither).
      Reply r = refuse(req, http::status::method_not_allowed, jsonrpc::server_error,
                       "Method not allowed: GET and DELETE need an Mcp-Session-Id (2025-era "
                       "sessions); 2026-07-28 requests are POSTs");
      r.response.set(http::field::allow, "POST");
      co_return r;
    }
    if (req.method() == http::verb::get) co_return sessions_.get(req, header, *tenant);
    co_return co_await sessions_.remove(req, header, *tenant);
  }

  if (auto refused = admission_.check_content_type(req)) co_return std::move(*refused);
  auto message = jsonrpc::parse(req.body());
  if (message.kind == jsonrpc::Kind::invalid)
    co_return refuse(req, http::status::bad_request, message.error_code, message.error, nullptr,
                     message.id);
  if (StatelessTransport::claims(req, message)) {
    // Mcp-Session-Id means nothing here; a sandbox handle names its replica as a session id
    // does.
    if (auto relayed = co_await forward_to_owner(req, owner_of(req, handle_named(message)), client,
                                                 Unreachable::answer_here))
      co_return std::move(*relayed);
    co_return co_await stateless_.post(req, tenant, std::move(message), client);
  }
  // 2025: Accept must list both response types (2026-07-28 sets no such rule).
  if (auto refused = admission_.check_accept(req)) co_return std::move(*refused);
  if (auto relayed = co_await forward_to_owner(req, owner_of(req, header.id), client))
    co_return std::move(*relayed);
  if (message.kind == jsonrpc::Kind::request && message.method == "initialize")
    co_return sessions_.initialize(req, tenant, message);
  co_return co_await sessions_.post(req, header, tenant, std::move(message), client);
}

std::optional<std::string> McpEndpoint::owner_of(const Request& req, std::string_view id) const {
  // A request another replica already forwarded is never sent on.
  if (!req[kForwardedHeader].empty()) return std::nullopt;
  return forwarder_.peer_for(id);
}

asio::awaitable<std::optional<Reply>> McpEndpoint::forward_to_owner(
    const Request& req, std::optional<std::string> peer, std::shared_ptr<CancelSignal> client,
    Unreachable unreachable) {
  if (!peer) co_return std::nullopt;
  auto relayed = co_await forwarder_.forward(req, *peer, std::move(client));
  metrics_.count_forward(relayed.has_value());
  if (relayed) co_return std::move(relayed);
  // A 2026-07-28 call is left to this replica, which tells the model the handle is out of
  // reach (a tool error, not a refusal of the request); a session's request gets 503 or 404.
  if (unreachable == Unreachable::answer_here) co_return std::nullopt;
  co_return forwarder_.unreachable(req);
}

}  // namespace sandgate::server
