#pragma once
// The gateway as an MCP client of one upstream (issue #45): one client session, never shared
// between tenants. Negotiates as the official clients do: `server/discover` with 2026-07-28
// first, falling back to `initialize` (2025-11-25) when the upstream answers 400/-32000,
// 404/-32601 or 200/-32601. Every answer is hostile input: its size, nesting and time are
// bounded; requests the upstream makes of its client (sampling, elicitation, roots) are refused
// with a JSON-RPC error; the session's header values are never logged.
//
// Safe to call from several coroutines at once (calls run concurrently; negotiation happens
// once, the others wait for it).
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "upstream/definition.hpp"

namespace sandgate::upstream {

// Why a request to an upstream failed. what() is a message the model can act on; it never
// holds arguments, results or credentials.
class UpstreamError : public std::runtime_error {
 public:
  enum class Kind {
    unreachable,  // no connection, TLS failed, HTTP error status
    timeout,      // the deadline passed
    cancelled,    // the caller's cancellation slot fired
    too_large,    // the answer passed limits.max_answer_bytes (or the nesting bound)
    protocol,     // not MCP: bad JSON-RPC, wrong id, unsupported version, bad event stream
    refused,      // a JSON-RPC error answer (e.g. unknown tool): the upstream's message
  };
  UpstreamError(Kind kind, const std::string& message) : std::runtime_error(message), kind_(kind) {}
  Kind kind() const { return kind_; }

 private:
  Kind kind_;
};
// "unreachable", "timeout", …: the metric label.
const char* upstream_error_name(UpstreamError::Kind kind);

struct UpstreamTool {
  std::string name;
  std::string description;
  nlohmann::json input_schema = nlohmann::json::object();
  nlohmann::json output_schema;  // null when the tool declares none
};

struct ToolList {
  std::vector<UpstreamTool> tools;   // the upstream's order, only those the definition allows
  std::chrono::milliseconds ttl{0};  // the answer's ttlMs, else the definition's tools_ttl
};

struct CallOutcome {
  // The CallToolResult as the upstream sent it (content, structuredContent, isError, …): a tool
  // error (isError true) is an outcome, not an UpstreamError.
  nlohmann::json result;
  std::uint64_t bytes = 0;  // the size of the upstream's answer on the wire
};

class McpClient {
 public:
  // Nothing is sent before the first request.
  static std::shared_ptr<McpClient> create(boost::asio::any_io_executor executor,
                                           std::shared_ptr<const UpstreamDefinition> definition);
  virtual ~McpClient() = default;

  // Both throw UpstreamError. `deadline` bounds the whole request, connection included. The
  // awaiting coroutine's cancellation slot (terminal) abandons the request and tells the
  // upstream (2025-11-25: notifications/cancelled; 2026-07-28: its response stream closed);
  // it then throws Kind::cancelled.
  virtual boost::asio::awaitable<ToolList> list_tools(
      std::chrono::steady_clock::time_point deadline) = 0;
  // `input_schema`: the tool's, when the caller has its list (2026-07-28: arguments the schema
  // marks with "x-mcp-header" also go as Mcp-Param-* headers); null when unknown.
  virtual boost::asio::awaitable<CallOutcome> call_tool(
      std::string tool, nlohmann::json arguments, std::chrono::steady_clock::time_point deadline,
      nlohmann::json input_schema = nullptr) = 0;

  // True once a notifications/tools/list_changed was seen on any of this client's streams,
  // until the next list_tools.
  virtual bool tools_changed() const = 0;
  // "2026-07-28" or "2025-11-25" once negotiated; empty before.
  virtual std::string protocol_version() const = 0;
  // Ends the upstream session (2025-11-25: DELETE, best effort, in the background); later
  // requests throw.
  virtual void close() = 0;
};

}  // namespace sandgate::upstream
