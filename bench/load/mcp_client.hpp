#pragma once
// A minimal MCP Streamable HTTP client for load generation: one keep-alive connection,
// coroutines, Bearer token. Speaks initialize + notifications/initialized, tools/call `execute`
// and DELETE, and reads a response whether the server answers with JSON or with an SSE stream.
#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace sandgate::bench {

namespace asio = boost::asio;
using nlohmann::json;

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
  asio::awaitable<void> ensure_connected();

  asio::ip::tcp::endpoint server_;
  std::string token_;
  boost::beast::tcp_stream stream_;
  boost::beast::flat_buffer buffer_;
  bool connected_ = false;
  bool reused_ = false;  // the connection has carried a whole request and answer already
  int next_id_ = 1;
};

}  // namespace sandgate::bench
