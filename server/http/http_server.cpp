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

#include "responses.hpp"
#include "common/json_dump.hpp"
#include "common/logging.hpp"

namespace sandgate::server {
namespace asio = boost::asio;
namespace beast = boost::beast;
using tcp = asio::ip::tcp;
constexpr auto kTuple = asio::as_tuple(asio::use_awaitable);

namespace {

std::atomic<std::uint64_t> g_event_id{1};

// Server-Sent Events over a chunked HTTP/1.1 response; one writer at a time by construction
// (the producer awaits each send).
template <class Stream>
class ChunkedEventSink final : public EventSink {
 public:
  ChunkedEventSink(Stream& stream, std::chrono::seconds write_timeout)
      : stream_(stream), write_timeout_(write_timeout) {}
  asio::awaitable<bool> send(const nlohmann::json& data) override {
    return write("id: " + std::to_string(g_event_id++) +
                 "\nevent: message\ndata: " + dump_json(data) + "\n\n");
  }
  asio::awaitable<bool> raw(std::string bytes) override { return write(std::move(bytes)); }
  asio::awaitable<bool> prime() override {
    return write("id: " + std::to_string(g_event_id++) + "\ndata: \n\n");
  }

 private:
  asio::awaitable<bool> write(std::string text) {
    // A client that stops reading its stream is dropped instead of pinning the connection.
    beast::get_lowest_layer(stream_).expires_after(write_timeout_);
    auto [ec, n] =
        co_await asio::async_write(stream_, http::make_chunk(asio::buffer(text)), kTuple);
    beast::get_lowest_layer(stream_).expires_never();
    co_return !ec;
  }
  Stream& stream_;
  std::chrono::seconds write_timeout_;
};

// The key a client's connections are counted under: its IPv4 address, or its IPv6 /64 (one
// host usually holds a whole /64 and could otherwise rotate through it).
asio::ip::address client_key(const asio::ip::address& address) {
  if (!address.is_v6()) return address;
  auto v6 = address.to_v6();
  if (v6.is_v4_mapped()) return asio::ip::make_address_v4(asio::ip::v4_mapped, v6);
  auto bytes = v6.to_bytes();
  std::fill(bytes.begin() + 8, bytes.end(), 0);
  return asio::ip::address_v6(bytes);
}

// After refusing a request whose body was never read: closing a socket with unread input makes
// the kernel send a reset, which can destroy the refusal before the client reads it. Read and
// discard for a short, bounded while (one small buffer, never kept) so that it arrives.
asio::awaitable<void> discard_briefly(beast::tcp_stream& stream) {
  char sink[16 * 1024];
  std::size_t total = 0;
  stream.expires_after(std::chrono::seconds(2));
  while (total < (1u << 20)) {
    auto [ec, n] = co_await stream.async_read_some(asio::buffer(sink), kTuple);
    if (ec) break;
    total += n;
  }
  stream.expires_never();
}

// While a request is handled nobody reads its connection, so a client that closes it would go
// unnoticed until the answer is written. This waits for the connection to become readable and
// peeks: zero bytes is the client's FIN, reported to `client`; bytes (a pipelined request)
// end the watch without consuming them. Ends with an error when the handler is done (the
// socket's waits are cancelled).
asio::awaitable<void> watch_for_close(tcp::socket& socket, std::shared_ptr<CancelSignal> client,
                                      std::shared_ptr<bool> finished) {
  for (;;) {
    auto [ec] = co_await socket.async_wait(tcp::socket::wait_read, kTuple);
    if (ec || *finished) co_return;
    char byte;
    ssize_t n = ::recv(socket.native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
      client->cancel();
      co_return;
    }
    if (n > 0) co_return;
  }
}

}  // namespace

HttpServer::HttpServer(asio::io_context& io, const Config& config, Endpoint& mcp, Metrics& metrics,
                       GaugeSource gauges)
    : io_(io),
      config_(config),
      metrics_(metrics),
      router_(mcp, metrics,
              [this, gauges = std::move(gauges)] {
                Gauges g = gauges();
                g.connections = connections_.load();
                return g;
              }),
      acceptor_(asio::make_strand(io)) {
  if (!config.tls_cert.empty()) {
    tls_.emplace(asio::ssl::context::tls_server);
    tls_->set_options(asio::ssl::context::default_workarounds | asio::ssl::context::no_sslv2 |
                      asio::ssl::context::no_sslv3 | asio::ssl::context::no_tlsv1 |
                      asio::ssl::context::no_tlsv1_1);
    tls_->use_certificate_chain_file(config.tls_cert);
    tls_->use_private_key_file(config.tls_key, asio::ssl::context::pem);
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

asio::awaitable<void> HttpServer::run_connection(tcp::socket socket, asio::ip::address key) {
  std::uint64_t id;
  {
    std::lock_guard lock(mutex_);
    id = next_connection_++;
  }
  try {
    if (tls_) {
      asio::ssl::stream<beast::tcp_stream> stream(beast::tcp_stream(std::move(socket)), *tls_);
      beast::get_lowest_layer(stream).expires_after(config_.header_timeout);
      auto [ec] = co_await stream.async_handshake(asio::ssl::stream_base::server, kTuple);
      if (!ec) {
        co_await serve(stream, id);
        beast::get_lowest_layer(stream).expires_after(std::chrono::seconds(2));
        co_await stream.async_shutdown(kTuple);
      }
    } else {
      beast::tcp_stream stream(std::move(socket));
      bool input_unread = co_await serve(stream, id);
      boost::system::error_code ignored;
      stream.socket().shutdown(tcp::socket::shutdown_send, ignored);
      if (input_unread) co_await discard_briefly(stream);
    }
  } catch (const std::exception& e) {
    log_event(LogLevel::error, "connection_error", {{"what", e.what()}});
  }
  release_address_slot(key);
  connections_--;
}

template <class Stream>
asio::awaitable<bool> HttpServer::serve(Stream& stream, std::uint64_t connection_id) {
  beast::flat_buffer buffer;
  auto& lowest = beast::get_lowest_layer(stream);
  auto executor = co_await asio::this_coro::executor;
  // At shutdown, idle connections are closed. The closer reaches the stream only through this
  // pointer, cleared (on this strand) before the stream goes away.
  auto target = std::make_shared<beast::tcp_stream*>(&lowest);
  struct Forget {
    HttpServer* server;
    std::uint64_t id;
    std::shared_ptr<beast::tcp_stream*> target;
    ~Forget() {
      *target = nullptr;
      std::lock_guard lock(server->mutex_);
      server->idle_closers_.erase(id);
    }
  } forget{this, connection_id, target};
  auto mark_idle = [&](bool idle) {
    std::lock_guard lock(mutex_);
    if (!idle) {
      idle_closers_.erase(connection_id);
      return;
    }
    idle_closers_[connection_id] = [executor, weak = std::weak_ptr(target)] {
      asio::post(executor, [weak] {
        if (auto t = weak.lock(); t && *t) (*t)->cancel();
      });
    };
  };
  for (;;) {
    if (router_.stopping()) co_return false;
    http::request_parser<http::string_body> parser;
    parser.header_limit(16 * 1024);
    parser.body_limit(effective_body_limit(config_));
    // Header deadline: covers a slow (dribbling) client and an idle keep-alive connection.
    lowest.expires_after(config_.header_timeout);
    mark_idle(true);
    auto [header_ec, header_n] = co_await http::async_read_header(stream, buffer, parser, kTuple);
    mark_idle(false);
    // A request we refuse before reading it all: answer, then close the connection.
    auto refuse_and_close = [&](http::status status, std::string body) -> asio::awaitable<void> {
      Response res = plain_response(parser.get(), status, std::move(body));
      res.keep_alive(false);
      lowest.expires_after(config_.body_timeout);
      co_await http::async_write(stream, res, kTuple);
    };
    if (header_ec == http::error::body_limit) {
      co_await refuse_and_close(http::status::payload_too_large, "Request body too large\n");
      co_return true;
    }
    if (header_ec == http::error::header_limit) {
      co_await refuse_and_close(http::status::request_header_fields_too_large,
                                "Headers too large\n");
      co_return true;
    }
    if (header_ec) co_return false;
    // Refused on its headers alone (Origin/Host, token, method): its body is neither invited
    // (no 100 Continue) nor read, so a client without a token makes us hold only its headers.
    if (auto refusal = router_.admit(parser.get())) {
      metrics_.count_http(refusal->result_int());
      bool body_unread = !parser.is_done();
      bool keep_alive = !body_unread && parser.get().keep_alive() && !router_.stopping();
      refusal->keep_alive(keep_alive);
      lowest.expires_after(config_.body_timeout);
      auto [ec, n] = co_await http::async_write(stream, *refusal, kTuple);
      if (ec || !keep_alive) co_return body_unread;
      continue;
    }
    if (beast::iequals(parser.get()[http::field::expect], "100-continue")) {
      http::response<http::empty_body> go{http::status::continue_, 11};
      co_await http::async_write(stream, go, kTuple);
    }
    lowest.expires_after(config_.body_timeout);
    auto [body_ec, body_n] = co_await http::async_read(stream, buffer, parser, kTuple);
    if (body_ec == http::error::body_limit) {
      co_await refuse_and_close(http::status::payload_too_large, "Request body too large\n");
      co_return true;
    }
    if (body_ec) co_return false;
    // While the request is handled (a call may run for minutes) the socket is not read.
    lowest.expires_never();
    Request request = parser.release();
    // Plain TCP only: under TLS the socket's bytes are records, and a peek cannot tell a
    // close_notify from the next request (a TLS client's departure shows at the next write).
    auto client = std::make_shared<CancelSignal>();
    auto finished = std::make_shared<bool>(false);
    if constexpr (std::is_same_v<Stream, beast::tcp_stream>)
      asio::co_spawn(executor, watch_for_close(stream.socket(), client, finished), asio::detached);
    struct StopWatching {
      std::shared_ptr<bool> finished;
      Stream& stream;
      ~StopWatching() {
        *finished = true;
        if constexpr (std::is_same_v<Stream, beast::tcp_stream>) {
          boost::system::error_code ignored;
          stream.socket().cancel(ignored);
        }
      }
    } stop_watching{finished, stream};
    Reply reply = co_await router_.route(request, client);
    metrics_.count_http(reply.response.result_int());
    bool keep_alive = request.keep_alive() && !router_.stopping();
    reply.response.keep_alive(keep_alive);
    // Writing has a deadline too: a client that does not read cannot pin the connection.
    lowest.expires_after(config_.body_timeout);
    if (!reply.stream) {
      auto [ec, n] = co_await http::async_write(stream, reply.response, kTuple);
      if (ec || !keep_alive) co_return false;
      continue;
    }
    // An event stream: headers, then events as chunks, then the last chunk.
    http::response<http::empty_body> head{reply.response.result(), request.version()};
    for (const auto& field : reply.response) head.set(field.name_string(), field.value());
    head.chunked(true);
    head.keep_alive(keep_alive);
    http::response_serializer<http::empty_body> serializer(head);
    auto [ec, n] = co_await http::async_write_header(stream, serializer, kTuple);
    if (ec) co_return false;
    ChunkedEventSink<Stream> sink(stream, config_.body_timeout);
    co_await reply.stream(sink);
    lowest.expires_after(config_.body_timeout);
    auto [end_ec, end_n] = co_await asio::async_write(stream, http::make_chunk_last(), kTuple);
    if (end_ec || !keep_alive) co_return false;
  }
}

}  // namespace sandgate::server
