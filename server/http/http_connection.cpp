// One connection of the HttpServer: its stream (plain or TLS), then request after request —
// read with limits and deadlines, admitted or refused on its headers, answered whole or as an
// event stream — until the client, an error or shutdown ends it.
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/ssl.hpp>

#include "chunked_event_sink.hpp"
#include "common/logging.hpp"
#include "connection_io.hpp"
#include "http_server.hpp"
#include "responses.hpp"

namespace sandgate::server {
namespace asio = boost::asio;
namespace beast = boost::beast;
using tcp = asio::ip::tcp;
constexpr auto kTuple = asio::as_tuple(asio::use_awaitable);

asio::awaitable<void> HttpServer::run_connection(tcp::socket socket, asio::ip::address key) {
  AddressShare share{key};
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
        co_await serve(stream, id, share);
        beast::get_lowest_layer(stream).expires_after(std::chrono::seconds(2));
        co_await stream.async_shutdown(kTuple);
      }
    } else {
      beast::tcp_stream stream(std::move(socket));
      bool input_unread = co_await serve(stream, id, share);
      boost::system::error_code ignored;
      stream.socket().shutdown(tcp::socket::shutdown_send, ignored);
      if (input_unread) co_await discard_briefly(stream);
    }
  } catch (const std::exception& e) {
    log_event(LogLevel::error, "connection_error", {{"what", e.what()}});
  }
  if (share.held) release_address_slot(share.key);
  connections_--;
}

template <class Stream>
asio::awaitable<bool> HttpServer::serve(Stream& stream, std::uint64_t connection_id,
                                        AddressShare& share) {
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
  const IdleMark mark_idle = [&](bool idle) {
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
    parser.body_limit(config_.body_limit_bytes);
    Next next = co_await read_request(stream, buffer, parser, mark_idle, share);
    if (next == Next::answer) next = co_await answer(stream, parser.release());
    if (next == Next::close) co_return false;
    if (next == Next::close_input_unread) co_return true;
  }
}

// Headers first (under the header deadline, which also bounds an idle keep-alive connection),
// then the admission rules on them, and only for an admitted request its body.
template <class Stream>
asio::awaitable<HttpServer::Next> HttpServer::read_request(
    Stream& stream, beast::flat_buffer& buffer, http::request_parser<http::string_body>& parser,
    const IdleMark& mark_idle, AddressShare& share) {
  auto& lowest = beast::get_lowest_layer(stream);
  lowest.expires_after(config_.header_timeout);
  mark_idle(true);
  auto [header_ec, header_n] = co_await http::async_read_header(stream, buffer, parser, kTuple);
  mark_idle(false);
  if (header_ec == http::error::body_limit) {
    co_await refuse(stream, parser, http::status::payload_too_large, "Request body too large\n");
    co_return Next::close_input_unread;
  }
  if (header_ec == http::error::header_limit) {
    co_await refuse(stream, parser, http::status::request_header_fields_too_large,
                    "Headers too large\n");
    co_return Next::close_input_unread;
  }
  if (header_ec) co_return Next::close;
  if (share.held && is_peer_secret(parser.get()[kPeerSecretHeader], config_.peer_secret)) {
    release_address_slot(share.key);
    share.held = false;
  }
  // Refused on its headers alone (Origin/Host, token, method): its body is neither invited
  // (no 100 Continue) nor read, so a client without a token makes us hold only its headers.
  if (auto refusal = co_await router_.admit(parser.get())) {
    metrics_.count_http(refusal->result_int());
    bool body_unread = !parser.is_done();
    bool keep_alive = !body_unread && parser.get().keep_alive() && !router_.stopping();
    refusal->keep_alive(keep_alive);
    lowest.expires_after(config_.body_timeout);
    auto [ec, n] = co_await http::async_write(stream, *refusal, kTuple);
    if (ec || !keep_alive) co_return body_unread ? Next::close_input_unread : Next::close;
    co_return Next::serve_again;
  }
  if (beast::iequals(parser.get()[http::field::expect], "100-continue")) {
    http::response<http::empty_body> go{http::status::continue_, 11};
    co_await http::async_write(stream, go, kTuple);
  }
  lowest.expires_after(config_.body_timeout);
  auto [body_ec, body_n] = co_await http::async_read(stream, buffer, parser, kTuple);
  if (body_ec == http::error::body_limit) {
    co_await refuse(stream, parser, http::status::payload_too_large, "Request body too large\n");
    co_return Next::close_input_unread;
  }
  if (body_ec) co_return Next::close;
  co_return Next::answer;
}

// A request refused before it was read whole: the answer, then the connection closes.
template <class Stream>
asio::awaitable<void> HttpServer::refuse(Stream& stream,
                                         http::request_parser<http::string_body>& parser,
                                         http::status status, std::string body) {
  Response res = plain_response(parser.get(), status, std::move(body));
  res.keep_alive(false);
  beast::get_lowest_layer(stream).expires_after(config_.body_timeout);
  co_await http::async_write(stream, res, kTuple);
}

// The router's answer to a whole request, written with a deadline (a client that does not read
// cannot pin the connection). While the request is handled (a call may run for minutes) the
// socket is not read, but a plain TCP client that leaves is noticed.
template <class Stream>
asio::awaitable<HttpServer::Next> HttpServer::answer(Stream& stream, Request request) {
  auto& lowest = beast::get_lowest_layer(stream);
  lowest.expires_never();
  // Plain TCP only: under TLS the socket's bytes are records, and a peek cannot tell a
  // close_notify from the next request (a TLS client's departure shows at the next write).
  auto client = std::make_shared<CancelSignal>();
  auto finished = std::make_shared<bool>(false);
  if constexpr (std::is_same_v<Stream, beast::tcp_stream>)
    asio::co_spawn(co_await asio::this_coro::executor,
                   watch_for_close(stream.socket(), client, finished), asio::detached);
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
  lowest.expires_after(config_.body_timeout);
  bool written;
  if (reply.stream) {
    written = co_await write_event_stream(stream, request, reply, keep_alive);
  } else {
    auto [ec, n] = co_await http::async_write(stream, reply.response, kTuple);
    written = !ec;
  }
  co_return written&& keep_alive ? Next::serve_again : Next::close;
}

// An event stream: the reply's headers, then its events as chunks, then the last chunk.
template <class Stream>
asio::awaitable<bool> HttpServer::write_event_stream(Stream& stream, const Request& request,
                                                     Reply& reply, bool keep_alive) {
  http::response<http::empty_body> head{reply.response.result(), request.version()};
  for (const auto& field : reply.response) head.set(field.name_string(), field.value());
  head.chunked(true);
  head.keep_alive(keep_alive);
  http::response_serializer<http::empty_body> serializer(head);
  auto [ec, n] = co_await http::async_write_header(stream, serializer, kTuple);
  if (ec) co_return false;
  ChunkedEventSink<Stream> sink(stream, config_.body_timeout);
  co_await reply.stream(sink);
  beast::get_lowest_layer(stream).expires_after(config_.body_timeout);
  auto [end_ec, end_n] = co_await asio::async_write(stream, http::make_chunk_last(), kTuple);
  co_return !end_ec;
}

}  // namespace sandgate::server
