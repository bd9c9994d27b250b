#pragma once
// The /mcp endpoint: admission (Origin/Host, token, method; then Content-Type and Accept),
// forwarding to the replica that holds a session or sandbox handle, and the choice of protocol
// era for each request: 2026-07-28 (stateless) when its _meta says so, else 2025 (sessions).
#include <boost/asio/awaitable.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "admission.hpp"
#include "auth/token_store.hpp"
#include "mcp_config.hpp"
#include "replica_forwarder.hpp"
#include "server/http/endpoint.hpp"
#include "server/metrics/metrics.hpp"
#include "server/tools/tool_registry.hpp"
#include "session/registry.hpp"
#include "session_transport.hpp"
#include "stateless_transport.hpp"

namespace sandgate::server {

class McpEndpoint final : public Endpoint {
 public:
  // `extension`: methods beyond tools (the conformance fixtures); null in production.
  // `oauth`: JWT access tokens besides the tokens file; null for the file alone.
  McpEndpoint(const McpEndpointConfig& config, const auth::TokenStore* tokens,
              auth::OAuthVerifier* oauth, session::Registry& registry, const ToolRegistry& tools,
              Metrics& metrics, MethodExtension* extension = nullptr);

  // The rules that need only the headers — Origin/Host (403), credentials (401/403), method (405) —
  // in that order. The connection calls this before it reads (or invites, with 100 Continue) a
  // body, so an unauthenticated client can make the gateway hold no more than its headers.
  boost::asio::awaitable<std::optional<Response>> admit(const Request& head) override;
  boost::asio::awaitable<Reply> handle(const Request& request,
                                       std::shared_ptr<CancelSignal> client) override;

  const Admission& admission() const { return admission_; }

 private:
  // Forwarding: the replica holding the session, handle or task `id` names, when another one
  // (never for a request that was forwarded already), and the request relayed there. Nothing
  // when the request is this replica's to answer.
  enum class Unreachable { refuse, answer_here };
  std::optional<std::string> owner_of(const Request& req, std::string_view id) const;
  boost::asio::awaitable<std::optional<Reply>> forward_to_owner(
      const Request& req, std::optional<std::string> peer, std::shared_ptr<CancelSignal> client,
      Unreachable unreachable = Unreachable::refuse);

  Admission admission_;
  ReplicaForwarder forwarder_;
  TaskStore tasks_;
  SessionTransport sessions_;
  StatelessTransport stateless_;
  Metrics& metrics_;
};

}  // namespace sandgate::server
