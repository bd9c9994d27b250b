#pragma once
// Accepts connections (plain or TLS) and serves HTTP/1.1 on them: one coroutine per
// connection on its own strand, a fresh parser per request with header and body limits and
// deadlines; the Router decides each answer.
#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <unordered_map>

#include "endpoint.hpp"
#include "http_types.hpp"
#include "router.hpp"
#include "server/http/http_config.hpp"
#include "server/metrics/metrics.hpp"

namespace sandgate::server {

class HttpServer {
 public:
  using GaugeSource = std::function<Gauges()>;
  // `config.body_limit_bytes` must be the limit itself (not 0).
  HttpServer(boost::asio::io_context& io, HttpConfig config, Endpoint& mcp, Metrics& metrics,
             GaugeSource gauges);

  // Binds and starts accepting; returns the bound endpoint. Throws on bind failure.
  boost::asio::ip::tcp::endpoint start();
  // Stops accepting and closes idle connections; busy ones finish their request first.
  void stop_accepting();
  std::size_t open_connections() const { return connections_.load(); }
  void set_ready(bool ready) { router_.set_ready(ready); }
  void set_not_ready_reason(std::string reason) { router_.set_not_ready_reason(std::move(reason)); }
  bool ready() const { return router_.ready(); }
  void set_degraded_notes(std::vector<std::string> notes) {
    router_.set_degraded_notes(std::move(notes));
  }
  // A public document (Router::serve_document); before start().
  void serve_document(std::string path, std::string content_type, std::string body) {
    router_.serve_document(std::move(path), std::move(content_type), std::move(body));
  }

 private:
  // Serves requests until the connection is done; true when it ends with client input left
  // unread (a refused body), which the caller discards briefly before closing.
  // A connection's place in its address's share (--max-connections-per-address): given back
  // when the connection closes, or once it shows the peer secret (another replica forwarding
  // its clients' requests, which must not count as one client).
  struct AddressShare {
    boost::asio::ip::address key;
    bool held = true;
  };
  template <class Stream>
  boost::asio::awaitable<bool> serve(Stream& stream, std::uint64_t connection_id,
                                     AddressShare& share);
  // What a connection does after each step of an exchange.
  enum class Next { answer, serve_again, close, close_input_unread };
  // Marks the connection idle (closable at shutdown) while it waits for a request's headers.
  using IdleMark = std::function<void(bool idle)>;
  template <class Stream>
  boost::asio::awaitable<Next> read_request(Stream& stream, boost::beast::flat_buffer& buffer,
                                            http::request_parser<http::string_body>& parser,
                                            const IdleMark& mark_idle, AddressShare& share);
  template <class Stream>
  boost::asio::awaitable<void> refuse(Stream& stream,
                                      http::request_parser<http::string_body>& parser,
                                      http::status status, std::string body);
  template <class Stream>
  boost::asio::awaitable<Next> answer(Stream& stream, Request request);
  template <class Stream>
  boost::asio::awaitable<bool> write_event_stream(Stream& stream, const Request& request,
                                                  Reply& reply, bool keep_alive);
  boost::asio::awaitable<void> accept_loop();
  boost::asio::awaitable<void> run_connection(boost::asio::ip::tcp::socket socket,
                                              boost::asio::ip::address client);
  // The per-address connection cap (--max-connections-per-address).
  bool take_address_slot(const boost::asio::ip::address& client);
  void release_address_slot(const boost::asio::ip::address& client);

  boost::asio::io_context& io_;
  const HttpConfig config_;
  Metrics& metrics_;
  std::atomic<std::size_t> connections_{0};
  Router router_;
  boost::asio::ip::tcp::acceptor acceptor_;
  boost::asio::ip::tcp protocol_ = boost::asio::ip::tcp::v4();
  std::optional<boost::asio::ssl::context> tls_;

  mutable std::mutex mutex_;
  std::uint64_t next_connection_ = 1;
  // Closes a connection if it is between requests (used at shutdown).
  std::unordered_map<std::uint64_t, std::function<void()>> idle_closers_;
  std::map<boost::asio::ip::address, std::uint32_t> per_address_;  // connections held
};

}  // namespace sandgate::server
