#pragma once
// Accepts connections (plain or TLS) and serves HTTP/1.1 on them: one coroutine per
// connection on its own strand, a fresh parser per request with header and body limits and
// deadlines, and routing to /mcp, /healthz, /readyz and /metrics.
#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <unordered_map>

#include "config.hpp"
#include "http_types.hpp"
#include "mcp_endpoint.hpp"
#include "metrics.hpp"

namespace sandgate::server {

class HttpServer {
 public:
  using GaugeSource = std::function<Gauges()>;
  HttpServer(boost::asio::io_context& io, const Config& config, McpEndpoint& endpoint,
             Metrics& metrics, GaugeSource gauges);

  // Binds and starts accepting; returns the bound endpoint. Throws on bind failure.
  boost::asio::ip::tcp::endpoint start();
  // Stops accepting and closes idle connections; busy ones finish their request first.
  void stop_accepting();
  std::size_t open_connections() const { return connections_.load(); }
  void set_ready(bool ready) { ready_ = ready; }
  void set_not_ready_reason(std::string reason);
  bool ready() const { return ready_; }

 private:
  template <class Stream>
  boost::asio::awaitable<void> serve(Stream& stream, std::uint64_t connection_id);
  boost::asio::awaitable<void> accept_loop();
  boost::asio::awaitable<void> run_connection(boost::asio::ip::tcp::socket socket);
  boost::asio::awaitable<Reply> route(const Request& request);
  Response plain(const Request& request, http::status status, std::string body,
                 const char* content_type = "text/plain; charset=utf-8");

  boost::asio::io_context& io_;
  const Config& config_;
  McpEndpoint& endpoint_;
  Metrics& metrics_;
  GaugeSource gauges_;
  boost::asio::ip::tcp::acceptor acceptor_;
  std::optional<boost::asio::ssl::context> tls_;
  std::atomic<std::size_t> connections_{0};
  std::atomic<bool> ready_{false};
  std::atomic<bool> stopping_{false};

  mutable std::mutex mutex_;
  std::string not_ready_reason_ = "starting: the sandbox self-test has not finished";
  std::uint64_t next_connection_ = 1;
  // Closes a connection if it is between requests (used at shutdown).
  std::unordered_map<std::uint64_t, std::function<void()>> idle_closers_;
};

}  // namespace sandgate::server
