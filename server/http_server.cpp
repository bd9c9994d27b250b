#include "http_server.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/ssl.hpp>

#include "json_dump.hpp"
#include "logging.hpp"

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

}  // namespace

HttpServer::HttpServer(asio::io_context& io, const Config& config, McpEndpoint& endpoint,
                       Metrics& metrics, GaugeSource gauges)
    : io_(io),
      config_(config),
      metrics_(metrics),
      router_(endpoint, metrics,
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
  acceptor_.open(where.protocol());
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
  for (;;) {
    auto [ec, socket] = co_await acceptor_.async_accept(asio::make_strand(io_), kTuple);
    if (ec == asio::error::operation_aborted || !acceptor_.is_open()) co_return;
    if (ec) continue;
    if (connections_.load() >= config_.max_connections) {
      // Over the limit: close at once rather than let it queue and pin memory.
      boost::system::error_code ignored;
      socket.close(ignored);
      continue;
    }
    // Counted here, not when the connection's coroutine first runs (later, maybe on another
    // thread): the next accept must already see it.
    connections_++;
    auto executor = socket.get_executor();
    asio::co_spawn(executor, run_connection(std::move(socket)), asio::detached);
  }
}

asio::awaitable<void> HttpServer::run_connection(tcp::socket socket) {
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
      co_await serve(stream, id);
      boost::system::error_code ignored;
      stream.socket().shutdown(tcp::socket::shutdown_send, ignored);
    }
  } catch (const std::exception& e) {
    log_event(LogLevel::error, "connection_error", {{"what", e.what()}});
  }
  connections_--;
}

template <class Stream>
asio::awaitable<void> HttpServer::serve(Stream& stream, std::uint64_t connection_id) {
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
    if (router_.stopping()) co_return;
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
      Response res = Router::plain(parser.get(), status, std::move(body));
      res.keep_alive(false);
      lowest.expires_after(config_.body_timeout);
      co_await http::async_write(stream, res, kTuple);
    };
    if (header_ec == http::error::body_limit) {
      co_await refuse_and_close(http::status::payload_too_large, "Request body too large\n");
      co_return;
    }
    if (header_ec == http::error::header_limit) {
      co_await refuse_and_close(http::status::request_header_fields_too_large,
                                "Headers too large\n");
      co_return;
    }
    if (header_ec) co_return;
    if (beast::iequals(parser.get()[http::field::expect], "100-continue")) {
      http::response<http::empty_body> go{http::status::continue_, 11};
      co_await http::async_write(stream, go, kTuple);
    }
    lowest.expires_after(config_.body_timeout);
    auto [body_ec, body_n] = co_await http::async_read(stream, buffer, parser, kTuple);
    if (body_ec == http::error::body_limit) {
      co_await refuse_and_close(http::status::payload_too_large, "Request body too large\n");
      co_return;
    }
    if (body_ec) co_return;
    // While the request is handled (a call may run for minutes) the socket is not read.
    lowest.expires_never();
    Request request = parser.release();
    Reply reply = co_await router_.route(request);
    metrics_.count_http(reply.response.result_int());
    bool keep_alive = request.keep_alive() && !router_.stopping();
    reply.response.keep_alive(keep_alive);
    // Writing has a deadline too: a client that does not read cannot pin the connection.
    lowest.expires_after(config_.body_timeout);
    if (!reply.stream) {
      auto [ec, n] = co_await http::async_write(stream, reply.response, kTuple);
      if (ec || !keep_alive) co_return;
      continue;
    }
    // An event stream: headers, then events as chunks, then the last chunk.
    http::response<http::empty_body> head{reply.response.result(), request.version()};
    for (const auto& field : reply.response) head.set(field.name_string(), field.value());
    head.chunked(true);
    head.keep_alive(keep_alive);
    http::response_serializer<http::empty_body> serializer(head);
    auto [ec, n] = co_await http::async_write_header(stream, serializer, kTuple);
    if (ec) co_return;
    ChunkedEventSink<Stream> sink(stream, config_.body_timeout);
    co_await reply.stream(sink);
    lowest.expires_after(config_.body_timeout);
    auto [end_ec, end_n] = co_await asio::async_write(stream, http::make_chunk_last(), kTuple);
    if (end_ec || !keep_alive) co_return;
  }
}

}  // namespace sandgate::server
