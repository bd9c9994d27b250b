#include "tests/support/http_client.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>
#include <boost/beast/http.hpp>
#include <cctype>

#include "tests/support/host_probe.hpp"

namespace sandgate::test {

using asio::use_awaitable;

namespace {

http::request<http::string_body> make_request(asio::ip::tcp::endpoint server, http::verb verb,
                                              const std::string& target, const std::string& body,
                                              const Headers& headers) {
  http::request<http::string_body> request{verb, target, 11};
  request.set(http::field::host,
              server.address().to_string() + ":" + std::to_string(server.port()));
  for (const auto& [name, value] : headers) request.set(name, value);
  request.body() = body;
  request.prepare_payload();
  return request;
}

// Runs `operation` on an io_context of its own until it is done; rethrows its exception.
template <class T>
T run_blocking(std::function<asio::awaitable<T>(asio::io_context&)> operation) {
  asio::io_context io;
  auto done = asio::co_spawn(io, operation(io), asio::use_future);
  io.run();
  return done.get();
}

}  // namespace

HttpConnection::HttpConnection(asio::any_io_executor executor, asio::ip::tcp::endpoint server)
    : HttpConnection(std::move(executor), server, Options{}) {}

HttpConnection::HttpConnection(asio::any_io_executor executor, asio::ip::tcp::endpoint server,
                               Options options)
    : server_(server), options_(options), stream_(std::move(executor)) {}

asio::awaitable<void> HttpConnection::ensure_connected() {
  if (connected_) co_return;
  stream_.expires_after(options_.connect_timeout);
  co_await stream_.async_connect(server_, use_awaitable);
  if (options_.no_delay) stream_.socket().set_option(asio::ip::tcp::no_delay(true));
  buffer_.clear();
  connected_ = true;
  reused_ = false;
}

void HttpConnection::close() {
  connected_ = false;
  boost::system::error_code ignored;
  stream_.socket().close(ignored);
}

asio::awaitable<HttpReply> HttpConnection::exchange(http::verb verb, const std::string& target,
                                                    const std::string& body,
                                                    const Headers& headers) {
  co_await ensure_connected();
  auto request = make_request(server_, verb, target, body, headers);
  http::response_parser<http::string_body> parser;
  parser.body_limit(64 << 20);
  for (bool reused = reused_;; reused = false) {
    stream_.expires_after(options_.exchange_timeout);
    bool closed_while_idle = false;
    try {
      co_await http::async_write(stream_, request, use_awaitable);
      co_await http::async_read(stream_, buffer_, parser, use_awaitable);
      break;
    } catch (const boost::system::system_error& e) {
      close();
      closed_while_idle =
          reused && !parser.got_some() &&
          (e.code() == http::error::end_of_stream || e.code() == asio::error::connection_reset ||
           e.code() == asio::error::broken_pipe || e.code() == asio::error::eof);
      if (!closed_while_idle) throw;
    } catch (...) {
      close();
      throw;
    }
    co_await ensure_connected();
  }
  reused_ = true;
  auto& response = parser.get();
  if (!response.keep_alive()) close();
  HttpReply reply;
  reply.status = response.result_int();
  for (const auto& field : response) {
    std::string name(field.name_string());
    for (auto& ch : name) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    reply.headers[name] = std::string(field.value());
  }
  reply.body = std::move(response.body());
  co_return reply;
}

asio::awaitable<void> HttpConnection::send_only(http::verb verb, const std::string& target,
                                                const std::string& body, const Headers& headers) {
  co_await ensure_connected();
  auto request = make_request(server_, verb, target, body, headers);
  stream_.expires_after(options_.exchange_timeout);
  co_await http::async_write(stream_, request, use_awaitable);
}

HttpReply http_request(asio::ip::tcp::endpoint server, http::verb verb, const std::string& target,
                       const std::string& body, const Headers& headers,
                       std::chrono::milliseconds timeout) {
  return run_blocking<HttpReply>([&](asio::io_context& io) -> asio::awaitable<HttpReply> {
    // Plain sockets, as a test's one request goes: no TCP_NODELAY.
    HttpConnection connection(io.get_executor(), server, {timeout, timeout, false});
    co_return co_await connection.exchange(verb, target, body, headers);
  });
}

std::pair<int, std::string> http_get(asio::ip::tcp::endpoint server, const std::string& path) {
  try {
    auto reply = http_request(server, http::verb::get, path, {}, {{"Host", "127.0.0.1"}},
                              std::chrono::seconds(5));
    return {reply.status, reply.body};
  } catch (const std::exception&) {
    return {0, {}};
  }
}

bool send_and_hold(asio::ip::tcp::endpoint server, http::verb verb, const std::string& target,
                   const std::string& body, const Headers& headers,
                   const std::function<bool()>& until, std::chrono::milliseconds limit) {
  asio::io_context io;
  // No deadline on the connection: it is held for as long as the caller's condition needs.
  HttpConnection connection(io.get_executor(), server,
                            {std::chrono::hours(24), std::chrono::hours(24), false});
  auto sent =
      asio::co_spawn(io, connection.send_only(verb, target, body, headers), asio::use_future);
  io.run();
  sent.get();
  bool held = eventually(until, limit);
  connection.close();
  return held;
}

}  // namespace sandgate::test
