#pragma once
// Accepts connections (plain or TLS) and serves HTTP/1.1 on them: one coroutine per
// connection on its own strand, a fresh parser per request with header and body limits and
// deadlines; the Router decides each answer.
#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <unordered_map>

#include "endpoint.hpp"
#include "http_types.hpp"
#include "router.hpp"
#include "server/config.hpp"
#include "server/metrics.hpp"

namespace sandgate::server {

class HttpServer {
 public:
  using GaugeSource = std::function<Gauges()>;
  HttpServer(boost::asio::io_context& io, const Config& config, Endpoint& mcp, Metrics& metrics,
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

 private:
  // Serves requests until the connection is done; true when it ends with client input left
  // unread (a refused body), which the caller discards briefly before closing.
  template <class Stream>
  boost::asio::awaitable<bool> serve(Stream& stream, std::uint64_t connection_id);
  boost::asio::awaitable<void> accept_loop();
  boost::asio::awaitable<void> run_connection(boost::asio::ip::tcp::socket socket,
                                              boost::asio::ip::address client);
  // The per-address connection cap (--max-connections-per-address).
  bool take_address_slot(const boost::asio::ip::address& client);
  void release_address_slot(const boost::asio::ip::address& client);

  boost::asio::io_context& io_;
  const Config& config_;
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
