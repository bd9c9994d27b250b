#pragma once
// The 2025-era transport (2025-11-25, also 2025-06-18 and 2025-03-26): initialize makes a
// session named by Mcp-Session-Id; its later POSTs, GET and DELETE name it in that header.
#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "auth/token_store.hpp"
#include "client_requests.hpp"
#include "common/cancel_signal.hpp"
#include "jsonrpc.hpp"
#include "mcp_methods.hpp"
#include "server/http/http_types.hpp"
#include "server/metrics/metrics.hpp"
#include "session/registry.hpp"
#include "session_header.hpp"

namespace sandgate::server {

class SessionTransport {
 public:
  SessionTransport(session::Registry& registry, const ToolRegistry& tools, Metrics& metrics,
                   MethodExtension* extension, TaskStore* tasks)
      : registry_(registry), metrics_(metrics), methods_(tools, extension, tasks) {}

  Reply initialize(const Request& request, const std::shared_ptr<const auth::Tenant>& tenant,
                   const jsonrpc::Message& message);
  boost::asio::awaitable<Reply> post(const Request& request, const SessionHeader& header,
                                     std::shared_ptr<const auth::Tenant> tenant,
                                     jsonrpc::Message message,
                                     std::shared_ptr<CancelSignal> client);
  Reply get(const Request& request, const SessionHeader& header, const auth::Tenant& tenant);
  // Answered once the removal is saved (Registry::removal_saved): a deleted session stays
  // deleted across a crash of the gateway.
  boost::asio::awaitable<Reply> remove(const Request& request, const SessionHeader& header,
                                       const auth::Tenant& tenant);

 private:
  // The steps of post() for a request in a known session.
  void take_notification(const std::string& session_id, const jsonrpc::Message& message);
  std::shared_ptr<RequestEvents> events_for(const std::string& session_id,
                                            const jsonrpc::Message& message,
                                            std::shared_ptr<Outbox> outbox);
  std::shared_ptr<CancelSignal> register_cancel(const std::string& key, const std::string& method,
                                                const std::shared_ptr<CancelSignal>& client);
  // A refusal when the MCP-Protocol-Version header names a version this era does not speak.
  std::optional<Reply> check_version(const Request& request) const;
  // The level logging/setLevel set for a session (index into the syslog levels), if any.
  std::optional<int> log_level(const std::string& session_id);
  void remember_log_level(const std::string& session_id, int level);

  session::Registry& registry_;
  Metrics& metrics_;
  McpMethods methods_;
  ClientRequests client_requests_;
  std::mutex mutex_;
  std::unordered_map<std::string, int> log_levels_;  // by session id; pruned as sessions end
  // The cancel signal of each request being answered, by "<session id>/<request id>": what
  // notifications/cancelled fires. An entry lives as long as its answer is being made.
  std::unordered_map<std::string, std::shared_ptr<CancelSignal>> cancels_;
  void forget_cancel(const std::string& key, const std::shared_ptr<CancelSignal>& mine);
};

}  // namespace sandgate::server
