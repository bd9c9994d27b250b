#pragma once
// The /mcp endpoint: admission (Origin/Host, token, method; then Content-Type and Accept),
// forwarding to the replica that holds a session or sandbox handle, and the choice of protocol
// era for each request: 2026-07-28 (stateless) when its _meta says so, else 2025 (sessions).
#include <boost/asio/awaitable.hpp>
#include <optional>

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
  McpEndpoint(const McpEndpointConfig& config, const auth::TokenStore* tokens,
              session::Registry& registry, const ToolRegistry& tools, Metrics& metrics,
              MethodExtension* extension = nullptr);

  // The rules that need only the headers — Origin/Host (403), token (401), method (405) — in
  // that order. The connection calls this before it reads (or invites, with 100 Continue) a
  // body, so an unauthenticated client can make the gateway hold no more than its headers.
  std::optional<Response> admit(const Request& head) const override;
  boost::asio::awaitable<Reply> handle(const Request& request,
                                       std::shared_ptr<CancelSignal> client) override;

  const Admission& admission() const { return admission_; }

 private:
  Admission admission_;
  ReplicaForwarder forwarder_;
  TaskStore tasks_;
  SessionTransport sessions_;
  StatelessTransport stateless_;
};

}  // namespace sandgate::server
