#include "upstream/http_exchange.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/host_name_verification.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <stdexcept>

#include "upstream/event_stream.hpp"
#include "upstream/mcp_client.hpp"

namespace sandgate::upstream {
namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;
constexpr auto kTuple = asio::as_tuple(asio::use_awaitable);

namespace {

constexpr std::size_t kMaxHeaderBytes = 16 * 1024;
constexpr std::size_t kMaxIdleConnections = 64;
// Node's HTTP server closes an idle keep-alive connection after 5 s; one idle for longer is
// likelier closed than not, and a request on it would fail (then be retried) for nothing.
constexpr auto kMaxIdle = std::chrono::seconds(4);
// How long the end of an event stream may follow its response before the connection is dropped.
constexpr auto kStreamEndGrace = std::chrono::milliseconds(100);

using Kind = UpstreamError::Kind;

bool cancelled(const asio::cancellation_state& state) {
  return state.cancelled() != asio::cancellation_type::none;
}

// What went wrong, for the model: no byte of the request or of the answer.
[[noreturn]] void fail(const boost::system::error_code& ec, const UpstreamDefinition& d,
                       Clock::time_point start, Clock::time_point deadline, bool was_cancelled) {
  const std::string who = "upstream '" + d.name + "'";
  if (was_cancelled) throw UpstreamError(Kind::cancelled, "the call to " + who + " was cancelled");
  if (ec == beast::error::timeout || Clock::now() >= deadline)
    throw UpstreamError(Kind::timeout,
                        who + " did not answer within " + describe_budget(deadline - start));
  if (ec == http::error::body_limit)
    throw UpstreamError(Kind::too_large, who + " answered more than " +
                                             std::to_string(d.limits.max_answer_bytes) + " bytes");
  if (ec == http::error::header_limit)
    throw UpstreamError(Kind::too_large, who + " answered with headers larger than 16 KiB");
  if (ec.category() == asio::error::get_ssl_category() ||
      ec.category() == asio::ssl::error::get_stream_category())
    throw UpstreamError(Kind::unreachable,
                        who + " is unreachable: the TLS handshake or its certificate check failed");
  if (ec == asio::error::connection_refused)
    throw UpstreamError(Kind::unreachable, who + " is unreachable: connection refused");
  if (ec == asio::error::host_not_found || ec == asio::error::host_not_found_try_again)
    throw UpstreamError(Kind::unreachable, who + " is unreachable: host not found");
  if (ec == http::error::end_of_stream || ec == asio::error::eof ||
      ec == asio::error::connection_reset || ec == http::error::partial_message)
    throw UpstreamError(Kind::unreachable, who + " closed the connection before it answered");
  if (ec.category() == http::make_error_code(http::error::bad_version).category())
    throw UpstreamError(Kind::protocol, who + " did not answer in HTTP/1.1");
  throw UpstreamError(Kind::unreachable, who + " is unreachable: network error");
}

// A failure on a kept-alive connection before any answer: the upstream closed it while idle,
// and the request is sent again on a new one.
bool stale(const boost::system::error_code& ec) {
  return ec == http::error::end_of_stream || ec == asio::error::eof ||
         ec == asio::error::connection_reset || ec == asio::error::broken_pipe ||
         ec == http::error::partial_message;
}

// The Host header: the host as written (an IPv6 literal in brackets), the port unless default.
std::string authority(const UpstreamDefinition& d) {
  std::string host = d.host.find(':') != std::string::npos ? "[" + d.host + "]" : d.host;
  if (d.port != (d.tls ? "443" : "80")) host += ":" + d.port;
  return host;
}

}  // namespace

struct ConnectionPool::Connection {
  std::unique_ptr<beast::tcp_stream> plain;
  std::unique_ptr<beast::ssl_stream<beast::tcp_stream>> secure;
  beast::flat_buffer buffer;
  Clock::time_point idle_since;
  bool reused = false;

  beast::tcp_stream& lowest() { return secure ? beast::get_lowest_layer(*secure) : *plain; }
};

namespace {

struct Outcome {
  boost::system::error_code ec;
  bool answered = false;  // some answer bytes came: never sent again
  bool keep = false;      // the connection may serve another request
  HttpAnswer answer;
};

template <class Stream>
asio::awaitable<Outcome> exchange_on(Stream& stream, ConnectionPool::Connection& connection,
                                     const http::request<http::string_body>& request,
                                     const UpstreamDefinition& d, Clock::time_point deadline,
                                     const EventHandler& on_event) {
  Outcome out;
  connection.lowest().expires_at(deadline);
  if (auto [ec, n] = co_await http::async_write(stream, request, kTuple); ec) {
    out.ec = ec;
    co_return out;
  }
  http::response_parser<http::string_body> parser;
  parser.header_limit(kMaxHeaderBytes);
  parser.body_limit(d.limits.max_answer_bytes);
  if (auto [ec, n] = co_await http::async_read_header(stream, connection.buffer, parser, kTuple);
      ec) {
    out.ec = ec;
    out.answered = n > 0;
    co_return out;
  }
  out.answered = true;
  auto& head = parser.get();
  out.answer.status = static_cast<int>(head.result_int());
  out.answer.session_id = std::string(head["Mcp-Session-Id"]);
  std::string type(head[http::field::content_type]);
  type = type.substr(0, type.find(';'));
  while (!type.empty() && type.back() == ' ') type.pop_back();
  for (auto& c : type) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  out.answer.event_stream = type == "text/event-stream";
  if (!out.answer.event_stream || out.answer.status < 200 || out.answer.status > 299) {
    out.answer.event_stream = false;
    if (auto [ec, n] = co_await http::async_read(stream, connection.buffer, parser, kTuple); ec) {
      out.ec = ec;
      co_return out;
    }
    out.answer.body = std::move(parser.get().body());
    out.answer.bytes = out.answer.body.size();
    out.keep = parser.get().keep_alive();
    co_return out;
  }
  EventStream events(d.limits.max_answer_bytes);
  bool found = false;
  while (!found && !parser.is_done()) {
    if (auto [ec, n] = co_await http::async_read_some(stream, connection.buffer, parser, kTuple);
        ec) {
      out.ec = ec;
      co_return out;
    }
    // The body read so far is consumed and dropped: the bound is the parser's, on the total.
    auto& body = parser.get().body();
    out.answer.bytes += body.size();
    std::vector<std::string> done;
    try {
      done = events.feed(body);
    } catch (const std::length_error&) {
      out.ec = http::error::body_limit;
      co_return out;
    }
    body.clear();
    for (auto& data : done)
      if (!found && on_event(std::move(data))) found = true;
  }
  // The response came; the stream's end (its last chunk) is usually on its way in the same
  // moment. Waiting a little for it keeps the connection for the next call; a stream the
  // upstream keeps open is dropped with its connection instead.
  if (found && !parser.is_done()) {
    connection.lowest().expires_at(std::min(deadline, Clock::now() + kStreamEndGrace));
    while (!parser.is_done()) {
      auto [ec, n] = co_await http::async_read_some(stream, connection.buffer, parser, kTuple);
      if (ec) break;
      out.answer.bytes += parser.get().body().size();
      parser.get().body().clear();
    }
  }
  out.keep = parser.is_done() && parser.get().keep_alive();
  co_return out;
}

}  // namespace

ConnectionPool::ConnectionPool(asio::any_io_executor executor,
                               std::shared_ptr<const UpstreamDefinition> definition)
    : executor_(std::move(executor)), definition_(std::move(definition)) {
  if (!definition_->tls) return;
  tls_ = std::make_unique<asio::ssl::context>(asio::ssl::context::tls_client);
  tls_->set_options(asio::ssl::context::default_workarounds | asio::ssl::context::no_sslv2 |
                    asio::ssl::context::no_sslv3 | asio::ssl::context::no_tlsv1 |
                    asio::ssl::context::no_tlsv1_1);
  boost::system::error_code ec;
  if (definition_->ca_file.empty())
    tls_->set_default_verify_paths(ec);
  else
    tls_->load_verify_file(definition_->ca_file, ec);
  if (ec)
    throw std::runtime_error("upstream '" + definition_->name + "': " +
                             (definition_->ca_file.empty()
                                  ? "cannot load the system's trust store"
                                  : "ca_file: cannot read it as PEM certificates"));
}

ConnectionPool::~ConnectionPool() = default;

std::unique_ptr<ConnectionPool::Connection> ConnectionPool::take_idle() {
  std::lock_guard lock(mutex_);
  while (!idle_.empty()) {
    auto connection = std::move(idle_.back());
    idle_.pop_back();
    if (Clock::now() - connection->idle_since < kMaxIdle) return connection;
  }
  return nullptr;
}

void ConnectionPool::give_back(std::unique_ptr<Connection> connection) {
  connection->idle_since = Clock::now();
  connection->reused = true;
  std::lock_guard lock(mutex_);
  if (idle_.size() < kMaxIdleConnections) idle_.push_back(std::move(connection));
}

void ConnectionPool::close_idle() {
  std::vector<std::unique_ptr<Connection>> dropped;
  std::lock_guard lock(mutex_);
  dropped.swap(idle_);
}

asio::awaitable<std::unique_ptr<ConnectionPool::Connection>> ConnectionPool::connect(
    Clock::time_point deadline) {
  using namespace asio::experimental::awaitable_operators;
  const auto& d = *definition_;
  const auto start = Clock::now();
  auto state = co_await asio::this_coro::cancellation_state;
  // getaddrinfo cannot be given a deadline: the timer ends the wait for it.
  tcp::resolver resolver(executor_);
  asio::steady_timer timer(executor_);
  timer.expires_at(deadline);
  auto raced =
      co_await (resolver.async_resolve(d.host, d.port, kTuple) || timer.async_wait(kTuple));
  if (raced.index() == 1) fail(beast::error::timeout, d, start, deadline, cancelled(state));
  auto [resolve_ec, endpoints] = std::get<0>(std::move(raced));
  if (resolve_ec) fail(resolve_ec, d, start, deadline, cancelled(state));
  auto connection = std::make_unique<Connection>();
  connection->plain = std::make_unique<beast::tcp_stream>(executor_);
  connection->plain->expires_at(deadline);
  if (auto [ec, ep] = co_await connection->plain->async_connect(endpoints, kTuple); ec)
    fail(ec, d, start, deadline, cancelled(state));
  connection->plain->socket().set_option(tcp::no_delay(true));
  if (!d.tls) co_return connection;
  connection->secure =
      std::make_unique<beast::ssl_stream<beast::tcp_stream>>(std::move(*connection->plain), *tls_);
  connection->plain.reset();
  auto& stream = *connection->secure;
  // SNI names a DNS host only (RFC 6066); the certificate must carry the name or the address.
  boost::system::error_code not_ip;
  asio::ip::make_address(d.host, not_ip);
  if (not_ip && !SSL_set_tlsext_host_name(stream.native_handle(), d.host.c_str()))
    throw UpstreamError(Kind::unreachable, "upstream '" + d.name + "': cannot set the TLS name");
  stream.set_verify_mode(asio::ssl::verify_peer);
  stream.set_verify_callback(asio::ssl::host_name_verification(d.host));
  if (auto [ec] = co_await stream.async_handshake(asio::ssl::stream_base::client, kTuple); ec)
    fail(ec, d, start, deadline, cancelled(state));
  co_return connection;
}

asio::awaitable<HttpAnswer> ConnectionPool::post(HttpPost post, Clock::time_point deadline,
                                                 EventHandler on_event) {
  const auto& d = *definition_;
  const auto start = Clock::now();
  auto state = co_await asio::this_coro::cancellation_state;
  http::request<http::string_body> request{post.is_delete ? http::verb::delete_ : http::verb::post,
                                           d.target, 11};
  request.set(http::field::host, authority(d));
  request.set(http::field::user_agent, "sandgate/" SANDGATE_VERSION);
  if (!post.is_delete) request.set(http::field::content_type, "application/json");
  request.set(http::field::accept, "application/json, text/event-stream");
  for (const auto& [name, value] : d.headers) request.set(name, value);
  for (const auto& [name, value] : post.headers) request.set(name, value);
  request.body() = std::move(post.body);
  request.prepare_payload();
  request.keep_alive(true);

  for (int attempt = 0;; ++attempt) {
    auto connection = take_idle();
    if (!connection) connection = co_await connect(deadline);
    Outcome out;
    if (connection->secure)
      out = co_await exchange_on(*connection->secure, *connection, request, d, deadline, on_event);
    else
      out = co_await exchange_on(*connection->plain, *connection, request, d, deadline, on_event);
    if (out.ec) {
      if (!cancelled(state) && connection->reused && !out.answered && stale(out.ec) &&
          attempt == 0 && Clock::now() < deadline)
        continue;
      // The connection is dropped with this frame: the upstream sees it closed.
      fail(out.ec, d, start, deadline, cancelled(state));
    }
    if (out.answer.status >= 300 && out.answer.status < 400)
      throw UpstreamError(Kind::unreachable,
                          "upstream '" + d.name + "' answered with a redirect (HTTP " +
                              std::to_string(out.answer.status) +
                              "), which the gateway does not follow: fix its url");
    if (out.keep) give_back(std::move(connection));
    co_return std::move(out.answer);
  }
}

std::string describe_budget(Clock::duration budget) {
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(budget).count();
  if (ms < 1000) return std::to_string(std::max<long long>(ms, 0)) + " ms";
  return std::to_string((ms + 500) / 1000) + " s";
}

}  // namespace sandgate::upstream
