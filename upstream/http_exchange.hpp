#pragma once
// One HTTP/1.1 POST to an upstream's MCP endpoint, over TCP or TLS (Beast, OpenSSL), on a
// connection kept alive between requests of one client: a tool call through the gateway should
// cost about what the same call costs an SDK client, and a TCP and TLS handshake per call would
// not. Everything the upstream sends is bounded: headers 16 KiB, the body (a JSON answer or a
// whole event stream) the definition's max_answer_bytes, the time the caller's deadline.
// Redirects are not followed (the operator named the URL). Failures throw UpstreamError with a
// message the model can act on, never with anything the request or the answer carried.
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/ssl/context.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "upstream/definition.hpp"

namespace sandgate::upstream {

struct HttpPost {
  std::string body;        // a JSON-RPC message
  bool is_delete = false;  // a DELETE ending a 2025-era session instead (no body)
  // Besides Host, Content-Type, Accept and the definition's own headers.
  std::vector<std::pair<std::string, std::string>> headers;
};

struct HttpAnswer {
  int status = 0;
  bool event_stream = false;  // Content-Type text/event-stream: the body went to on_event
  std::string session_id;     // its Mcp-Session-Id header, if any
  std::string body;           // any other body, whole
  std::uint64_t bytes = 0;    // body bytes read
};

// Handed the data of each event of an event-stream answer; returns true once it has what the
// request waits for (the rest of the stream is not read, and its connection not kept).
using EventHandler = std::function<bool(std::string&& data)>;

class ConnectionPool {
 public:
  struct Connection;
  ConnectionPool(boost::asio::any_io_executor executor,
                 std::shared_ptr<const UpstreamDefinition> definition);
  ~ConnectionPool();

  boost::asio::awaitable<HttpAnswer> post(HttpPost request,
                                          std::chrono::steady_clock::time_point deadline,
                                          EventHandler on_event);
  // Drops the idle connections (the client is closing).
  void close_idle();

 private:
  std::unique_ptr<Connection> take_idle();
  void give_back(std::unique_ptr<Connection> connection);
  boost::asio::awaitable<std::unique_ptr<Connection>> connect(
      std::chrono::steady_clock::time_point deadline);

  boost::asio::any_io_executor executor_;
  std::shared_ptr<const UpstreamDefinition> definition_;
  std::unique_ptr<boost::asio::ssl::context> tls_;  // only for https
  std::mutex mutex_;
  std::vector<std::unique_ptr<Connection>> idle_;
};

// "30 s", "500 ms": how long a request had, for "did not answer within …".
std::string describe_budget(std::chrono::steady_clock::duration budget);

}  // namespace sandgate::upstream
