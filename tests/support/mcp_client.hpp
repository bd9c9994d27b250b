#pragma once
// The MCP Streamable HTTP client of the benchmark and the soak: one kept-alive connection,
// coroutines (many clients on one thread), Bearer token. Speaks initialize +
// notifications/initialized, tools/call `execute` (2025-11-25 in a session, 2026-07-28 without)
// and DELETE, and reads a response whether the server answers with JSON or with an SSE stream.
#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "tests/support/http_client.hpp"

namespace sandgate::test {

// An HTTP status or JSON-RPC error where the workload expected success.
struct McpFailure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class McpClient {
 public:
  McpClient(asio::any_io_executor executor, asio::ip::tcp::endpoint server, std::string token);

  // Opens a session: initialize, then notifications/initialized. Returns the session id.
  asio::awaitable<std::string> initialize();
  // tools/call execute; returns the CallToolResult. Throws McpFailure on a tool error. `fresh`
  // asks sandgate for a process of its own instead of the persistent interpreter.
  asio::awaitable<json> execute(const std::string& session, const std::string& language,
                                const std::string& code, int timeout_seconds = 60,
                                bool fresh = false);
  // tools/call execute as a 2026-07-28 client sends it (no session; `sandbox_id` empty: a new
  // sandbox); returns the CallToolResult, whose structuredContent names the sandbox.
  asio::awaitable<json> execute_stateless(const std::string& sandbox_id,
                                          const std::string& language, const std::string& code);
  // DELETE of the session; throws McpFailure unless the server answers 2xx.
  asio::awaitable<void> end(const std::string& session);

  // One request as it is, for callers that check every answer themselves (the soak driver):
  // `method` is "POST" or "DELETE"; an empty `token` sends no credentials.
  struct Reply {
    int status = 0;
    std::string session_id;
    std::optional<json> message;  // the JSON-RPC response, if any
  };
  asio::awaitable<Reply> send(const std::string& method, const std::string& session,
                              const std::string& body);
  asio::awaitable<Reply> send(const std::string& method, const std::string& session,
                              const std::string& body, const std::string& token,
                              const std::vector<std::pair<std::string, std::string>>& extra = {});
  int next_id() { return next_id_++; }

 private:
  HttpConnection connection_;
  std::string token_;
  int next_id_ = 1;
};

}  // namespace sandgate::test
