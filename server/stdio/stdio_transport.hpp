#pragma once
// The MCP stdio transport (newline-delimited JSON-RPC on standard input and output) in front of
// the same Endpoint the HTTP server serves: each line becomes a POST /mcp with the headers an
// HTTP client of that era would send (the session id once initialize made one, the negotiated
// MCP-Protocol-Version; for a 2026-07-28 message its Mcp-Method and Mcp-Name), and each answer,
// plain or streamed, goes back as lines. Only protocol on stdout; logs stay on stderr.
#include <atomic>
#include <boost/asio/any_io_executor.hpp>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>

#include "server/http/endpoint.hpp"

namespace sandgate::server {

class StdioTransport {
 public:
  // `max_line`: the longest line taken (the HTTP body limit); a longer one is answered with a
  // JSON-RPC parse error and skipped. `on_closed` runs (on the reader's thread) when input ends.
  StdioTransport(boost::asio::any_io_executor executor, Endpoint& endpoint, int in_fd, int out_fd,
                 std::size_t max_line, std::function<void()> on_closed);
  // Reads on a thread of its own (standard input may be a pipe, a file or a terminal, which
  // an event loop cannot all wait on); each request is handled on `executor`.
  void start();
  // From now on lines are not handled and `on_closed` is not run: the gateway is past serving
  // (its endpoint and executor are about to go).
  void stop();

  struct State;

 private:
  std::shared_ptr<State> state_;
};

}  // namespace sandgate::server
