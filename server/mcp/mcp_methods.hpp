#pragma once
// The JSON-RPC methods of a 2025-era MCP session: initialize, ping, tools/list, tools/call,
// logging/setLevel and the notifications. HTTP rules live in the transports.
#include <boost/asio/awaitable.hpp>
#include <memory>
#include <nlohmann/json.hpp>

#include "jsonrpc.hpp"
#include "method_extension.hpp"
#include "server/tasks/task_store.hpp"
#include "server/tools/tool_registry.hpp"
#include "session/session.hpp"

namespace sandgate::server {

// tools/call's params checked and the tool found: an error response, or the result.
boost::asio::awaitable<nlohmann::json> call_tool(const ToolRegistry& tools, ToolCall call,
                                                 const jsonrpc::Message& request);
// Runs a call of `tool` whose arguments are set: a ProtocolError it throws becomes the error
// response; null when the call was cancelled (no response).
boost::asio::awaitable<nlohmann::json> run_tool_call(Tool& tool, ToolCall call,
                                                     const jsonrpc::Message& request);

// A JSON-RPC error response from an extension's {"code", "message", "data"?}.
nlohmann::json extension_error(const nlohmann::json& id, const nlohmann::json& error);

class McpMethods {
 public:
  // `tasks`: where calls run as tasks live; null: this server offers no tasks.
  McpMethods(const ToolRegistry& tools, MethodExtension* extension, TaskStore* tasks = nullptr)
      : tools_(tools), extension_(extension), tasks_(tasks) {}

  // The result of initialize (version negotiation), or a JSON-RPC error response.
  nlohmann::json initialize(const jsonrpc::Message& request) const;
  // Answers a request of an existing session; null when a cancelled call gets no response.
  // `cancel` fires on the request's notifications/cancelled.
  boost::asio::awaitable<nlohmann::json> answer(std::shared_ptr<session::Session> session,
                                                std::shared_ptr<const auth::Tenant> tenant,
                                                const jsonrpc::Message& request,
                                                std::shared_ptr<CallEvents> events,
                                                std::shared_ptr<CancelSignal> cancel);

 private:
  const ToolRegistry& tools_;
  MethodExtension* extension_;
  TaskStore* tasks_;
};

}  // namespace sandgate::server
