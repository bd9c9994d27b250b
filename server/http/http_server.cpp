// The listener of HttpServer: binds, accepts (close-on-exec from the first instant), and
// holds the caps on connections overall and per client address; each connection is served
// by http_connection.cpp.
#include "http_server.hpp"

#include <sys/socket.h>
#include <unistd.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/ssl.hpp>
#include <cerrno>

#include "connection_io.hpp"

namespace sandgate::server {
namespace asio = boost::asio;
namespace beast = boost::beast;
using tcp = asio::ip::tcp;
constexpr auto kTuple = asio::as_tuple(asio::use_awaitable);

HttpServer::HttpServer(asio::io_context& io, HttpConfig config, Endpoint& mcp, Metrics& metrics,
                       GaugeSource gauges)
    : io_(io),
      config_(std::move(config)),
      metrics_(metrics),
      router_(mcp, metrics,
              [this, gauges = std::move(gauges)] {
                Gauges g = gauges();
                g.connections = connections_.load();
                return g;
              }),
      acceptor_(asio::make_strand(io)) {
  if (!config_.tls_cert.empty()) {
    tls_.emplace(asio::ssl::context::tls_server);
    tls_->set_options(asio::ssl::context::default_workarounds | asio::ssl::context::no_sslv2 |
                      asio::ssl::context::no_sslv3 | asio::ssl::context::no_tlsv1 |
                      asio::ssl::context::no_tlsv1_1);
    tls_->use_certificate_chain_file(config_.tls_cert);
    tls_->use_private_key_file(config_.tls_key, asio::ssl::context::pem);
  }
}

tcp::endpoint HttpServer::start() {
  tcp::endpoint where(asio::ip::make_address(
                          config_.listen_host == "localhost" ? "127.0.0.1" : config_.listen_host),
                      config_.listen_port);
  // Opened with SOCK_CLOEXEC (Asio's open() does not pass it): a program the gateway starts —
  // a sandbox's supervisor is exec'ed from a clone of this process — must never inherit the
  // listening socket and accept other clients' requests.
  int fd =
      ::socket(where.protocol().family(), SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, IPPROTO_TCP);
  if (fd < 0) throw boost::system::system_error(errno, boost::system::system_category(), "socket");
  boost::system::error_code assign_ec;
  acceptor_.assign(where.protocol(), fd, assign_ec);
  if (assign_ec) {
    ::close(fd);
    throw boost::system::system_error(assign_ec, "assign listening socket");
  }
  protocol_ = where.protocol();
  acceptor_.set_option(asio::socket_base::reuse_address(true));
  acceptor_.bind(where);
  acceptor_.listen(asio::socket_base::max_listen_connections);
  asio::co_spawn(acceptor_.get_executor(), accept_loop(), asio::detached);
  return acceptor_.local_endpoint();
}

void HttpServer::stop_accepting() {
  router_.set_stopping();
  asio::post(acceptor_.get_executor(), [this] {
    boost::system::error_code ignored;
    acceptor_.close(ignored);
  });
  std::lock_guard lock(mutex_);
  for (auto& [id, close] : idle_closers_) close();
}

asio::awaitable<void> HttpServer::accept_loop() {
  asio::steady_timer backoff(acceptor_.get_executor());
  for (;;) {
    auto [wait_ec] = co_await acceptor_.async_wait(tcp::acceptor::wait_read, kTuple);
    if (wait_ec == asio::error::operation_aborted || !acceptor_.is_open()) co_return;
    // accept4 with SOCK_CLOEXEC (Asio's accept passes no flags): a connection is close-on-exec
    // from its first instant, so a sandbox started on another thread at that moment cannot
    // inherit it.
    int fd = ::accept4(acceptor_.native_handle(), nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) {
      if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
        // The connection stays pending and the socket readable: back off instead of spinning.
        backoff.expires_after(std::chrono::milliseconds(50));
        co_await backoff.async_wait(kTuple);
      }
      continue;  // EAGAIN (nothing left to accept), ECONNABORTED, EINTR
    }
    tcp::socket socket(asio::make_strand(io_));
    boost::system::error_code ec;
    socket.assign(protocol_, fd, ec);
    if (ec) {
      ::close(fd);
      continue;
    }
    auto peer = socket.remote_endpoint(ec);
    if (ec || connections_.load() >= config_.max_connections) {
      // Over the limit: close at once rather than let it queue and pin memory.
      socket.close(ec);
      continue;
    }
    auto key = client_key(peer.address());
    if (!take_address_slot(key)) {
      socket.close(ec);  // this address holds its share already
      continue;
    }
    // Counted here, not when the connection's coroutine first runs (later, maybe on another
    // thread): the next accept must already see it.
    connections_++;
    auto executor = socket.get_executor();
    asio::co_spawn(executor, run_connection(std::move(socket), key), asio::detached);
  }
}

bool HttpServer::take_address_slot(const asio::ip::address& key) {
  std::uint32_t cap = effective_connections_per_address(config_);
  if (cap == 0) return true;
  std::lock_guard lock(mutex_);
  auto& held = per_address_[key];  // a new entry starts at 0 < cap
  if (held >= cap) return false;
  ++held;
  return true;
}

void HttpServer::release_address_slot(const asio::ip::address& key) {
  if (effective_connections_per_address(config_) == 0) return;
  std::lock_guard lock(mutex_);
  if (auto it = per_address_.find(key); it != per_address_.end() && --it->second == 0)
    per_address_.erase(it);
}

}  // namespace sandgate::server
