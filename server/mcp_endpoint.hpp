#pragma once
// The /mcp endpoint of the Streamable HTTP transport (spec 2025-11-25, also 2025-06-18 and
// 2025-03-26): Origin and Host checks, tokens, Accept, session ids, protocol version header,
// and which response a message gets. Every rule answers with its own status code.
#include <boost/asio/awaitable.hpp>
#include <optional>

#include "auth/token_store.hpp"
#include "config.hpp"
#include "http_types.hpp"
#include "mcp_methods.hpp"
#include "metrics.hpp"
#include "replica_forwarder.hpp"
#include "session/registry.hpp"

namespace sandgate::server {

class McpEndpoint {
 public:
  McpEndpoint(const Config& config, const auth::TokenStore* tokens, session::Registry& registry,
              Metrics& metrics);

  // The rules that need only the headers — Origin/Host (403), token (401), method (405) — in
  // that order: a refusal, or nothing when the request may go on. The connection calls this
  // before it reads (or invites, with 100 Continue) a body, so an unauthenticated client can
  // make the gateway hold no more than its headers.
  std::optional<Reply> admit(const Request& head) const;
  boost::asio::awaitable<Reply> handle(const Request& request);

  // The DNS-rebinding rules, exposed for tests.
  bool origin_allowed(std::string_view origin) const;
  bool host_allowed(std::string_view host) const;

 private:
  // admit()'s rules; sets `tenant` when the request may go on.
  std::optional<Reply> check_head(const Request& request,
                                  std::shared_ptr<const auth::Tenant>& tenant) const;
  // 415 / 406 for a POST whose headers are wrong; nothing when they are right.
  std::optional<Reply> check_post_headers(const Request& request) const;
  boost::asio::awaitable<Reply> post_to_session(const Request& request, const auth::Tenant& tenant,
                                                jsonrpc::Message message);
  Reply initialize(const Request& request, const auth::Tenant& tenant,
                   const jsonrpc::Message& message);
  Reply stream_tool_call(const Request& request, std::shared_ptr<session::Session> session,
                         jsonrpc::Message message);

  const Config& config_;
  const auth::TokenStore* tokens_;
  session::Registry& registry_;
  Metrics& metrics_;
  McpMethods methods_;
  ReplicaForwarder forwarder_;
};

}  // namespace sandgate::server
