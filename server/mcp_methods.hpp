#pragma once
// The JSON-RPC methods of an MCP session: initialize, ping, tools/list, tools/call,
// logging/setLevel and the notifications. HTTP rules live in mcp_endpoint.
#include <boost/asio/awaitable.hpp>
#include <nlohmann/json.hpp>
#include <string>

#include "execute_tool.hpp"
#include "jsonrpc.hpp"
#include "metrics.hpp"
#include "session/session.hpp"

namespace sandgate::server {

constexpr const char* kLatestProtocolVersion = "2025-11-25";
bool is_supported_protocol_version(const std::string& version);

class McpMethods {
 public:
  McpMethods(ToolLimits limits, Metrics& metrics) : limits_(limits), metrics_(metrics) {}

  // The result of initialize (version negotiation), or a JSON-RPC error response.
  nlohmann::json initialize(const jsonrpc::Message& request) const;
  // Answers a request of an existing session.
  boost::asio::awaitable<nlohmann::json> answer(session::Session& session,
                                                const jsonrpc::Message& request);
  // Acts on a notification (cancellation); nothing is answered.
  void notify(session::Session& session, const jsonrpc::Message& notification);

  // tools/call with a valid `execute` request; exposed for the streaming path.
  boost::asio::awaitable<nlohmann::json> call_tool(session::Session& session,
                                                   const jsonrpc::Message& request);

 private:
  ToolLimits limits_;
  Metrics& metrics_;
};

}  // namespace sandgate::server
