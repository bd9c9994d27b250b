#pragma once
// The 2026-07-28 transport: no session. Every POST carries its protocol version and client
// capabilities in params._meta and mirrors method and name in headers; state lives in sandbox
// handles the tools return. Closing the response stream cancels the request.
#include <atomic>
#include <boost/asio/awaitable.hpp>
#include <memory>

#include "auth/token_store.hpp"
#include "common/cancel_signal.hpp"
#include "jsonrpc.hpp"
#include "method_extension.hpp"
#include "server/http/http_types.hpp"
#include "server/tasks/task_store.hpp"
#include "server/tools/tool_registry.hpp"

namespace sandgate::server {

class StatelessTransport {
 public:
  StatelessTransport(const ToolRegistry& tools, MethodExtension* extension,
                     std::string instructions)
      : tools_(tools), extension_(extension), instructions_(std::move(instructions)) {}
  // Offers the tasks extension, its tasks kept in `tasks`.
  void offer_tasks(TaskStore* tasks) { tasks_ = tasks; }

  // Whether a POST belongs to this era: its _meta names a protocol version, or (without a
  // session) its MCP-Protocol-Version header names a stateless one.
  static bool claims(const Request& request, const jsonrpc::Message& message);

  boost::asio::awaitable<Reply> post(const Request& request,
                                     std::shared_ptr<const auth::Tenant> tenant,
                                     jsonrpc::Message message,
                                     std::shared_ptr<CancelSignal> client);

 private:
  // The envelope and header rules, in the order the spec's errors imply; a refusal or nothing.
  std::optional<Reply> check(const Request& request, const jsonrpc::Message& message) const;
  std::optional<Reply> check_envelope(const Request& request,
                                      const jsonrpc::Message& message) const;
  std::optional<Reply> check_version_headers(const Request& request,
                                             const jsonrpc::Message& message) const;
  std::optional<Reply> check_method_headers(const Request& request,
                                            const jsonrpc::Message& message) const;
  bool knows(const std::string& method) const;
  // The result of a request that passed check(), or a JSON-RPC error.
  boost::asio::awaitable<nlohmann::json> answer(std::shared_ptr<const auth::Tenant> tenant,
                                                jsonrpc::Message message,
                                                std::shared_ptr<CancelSignal> client,
                                                std::shared_ptr<CallEvents> events);
  // The steps of answer(), one per family of methods.
  // As `tenant` sees them (its environments).
  nlohmann::json list_tools(const jsonrpc::Message& message, const auth::Tenant& tenant) const;
  boost::asio::awaitable<nlohmann::json> call_tool_2026(std::shared_ptr<const auth::Tenant> tenant,
                                                        const jsonrpc::Message& message,
                                                        bool declares_tasks,
                                                        std::shared_ptr<CancelSignal> client,
                                                        std::shared_ptr<CallEvents> events);
  boost::asio::awaitable<nlohmann::json> answer_file_resources(const std::string& tenant,
                                                               const jsonrpc::Message& message);
  boost::asio::awaitable<nlohmann::json> answer_extension(const jsonrpc::Message& message,
                                                          std::shared_ptr<CallEvents> events);
  nlohmann::json discover() const;
  nlohmann::json capabilities() const;

  const ToolRegistry& tools_;
  MethodExtension* extension_;
  TaskStore* tasks_ = nullptr;
  std::string instructions_;
  std::atomic<std::uint64_t> next_call_{1};
};

}  // namespace sandgate::server
