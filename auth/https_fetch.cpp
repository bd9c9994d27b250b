#include "auth/https_fetch.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/experimental/concurrent_channel.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/host_name_verification.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <optional>
#include <stdexcept>
#include <variant>

#include "auth/http_url.hpp"

namespace sandgate::auth {
namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;
constexpr auto kTuple = asio::as_tuple(asio::use_awaitable);

namespace {

constexpr std::size_t kMaxHeaderBytes = 16 * 1024;

struct Exchange {
  int status = 0;
  std::string body;
  std::string location;
  std::string problem;
};

FetchResult failed(std::string problem, int status = 0) {
  return FetchResult{status, {}, std::move(problem)};
}

// What went wrong, in words an operator can act on, without anything the peer sent.
std::string phrase(const boost::system::error_code& ec, bool deadline_passed) {
  if (deadline_passed || ec == beast::error::timeout) return "timeout";
  if (ec == http::error::body_limit) return "too large";
  if (ec == http::error::header_limit) return "headers too large";
  if (ec.category() == asio::error::get_ssl_category()) return "TLS (certificate or handshake)";
  if (ec == asio::error::connection_refused) return "connection refused";
  if (ec == asio::error::host_not_found || ec == asio::error::host_not_found_try_again)
    return "host not found";
  return "network error";
}

template <class Stream>
asio::awaitable<Exchange> send_and_read(Stream& stream, const HttpUrl& url,
                                        const FetchRequest& request, const FetchLimits& limits,
                                        Clock::time_point deadline) {
  Exchange out;
  http::request<http::string_body> req{
      request.form_body.empty() ? http::verb::get : http::verb::post, url.target, 11};
  req.set(http::field::host, url.origin().substr(url.tls ? 8 : 7));
  req.set(http::field::user_agent, "sandgate");
  req.set(http::field::accept, "application/json");
  if (!request.authorization.empty()) req.set(http::field::authorization, request.authorization);
  if (!request.form_body.empty()) {
    req.set(http::field::content_type, "application/x-www-form-urlencoded");
    req.body() = request.form_body;
  }
  req.prepare_payload();
  req.keep_alive(false);
  beast::get_lowest_layer(stream).expires_at(deadline);
  if (auto [ec, n] = co_await http::async_write(stream, req, kTuple); ec) {
    out.problem = phrase(ec, Clock::now() >= deadline);
    co_return out;
  }
  beast::flat_buffer buffer;
  http::response_parser<http::string_body> parser;
  parser.header_limit(kMaxHeaderBytes);
  parser.body_limit(limits.max_body_bytes);
  if (auto [ec, n] = co_await http::async_read(stream, buffer, parser, kTuple); ec) {
    out.problem = phrase(ec, Clock::now() >= deadline);
    co_return out;
  }
  auto& res = parser.get();
  out.status = static_cast<int>(res.result_int());
  out.location = std::string(res[http::field::location]);
  out.body = std::move(res.body());
  co_return out;
}

// One request to one URL, no redirects followed.
asio::awaitable<Exchange> exchange(asio::any_io_executor executor, asio::ssl::context& tls,
                                   const HttpUrl& url, const FetchRequest& request,
                                   const FetchLimits& limits, Clock::time_point deadline) {
  using namespace asio::experimental::awaitable_operators;
  Exchange out;
  // getaddrinfo has no deadline of its own, nor can its wait be cancelled: it runs on, holding
  // its own state, while the request stops waiting for it at the deadline (the channel's
  // receive is cancellable, so the timer ends the race at once).
  using Resolved = tcp::resolver::results_type;
  using Channel = asio::experimental::concurrent_channel<void(boost::system::error_code, Resolved)>;
  auto resolver = std::make_shared<tcp::resolver>(executor);
  auto resolved = std::make_shared<Channel>(executor, 1);
  resolver->async_resolve(url.host, url.port,
                          [resolver, resolved](boost::system::error_code ec, Resolved results) {
                            resolved->try_send(ec, std::move(results));
                          });
  asio::steady_timer timer(executor);
  timer.expires_at(deadline);
  auto raced = co_await (resolved->async_receive(kTuple) || timer.async_wait(kTuple));
  if (raced.index() == 1) {
    resolver->cancel();
    out.problem = "timeout";
    co_return out;
  }
  auto [resolve_ec, endpoints] = std::get<0>(std::move(raced));
  if (resolve_ec) {
    out.problem = phrase(resolve_ec, false);
    co_return out;
  }
  beast::tcp_stream tcp_stream(executor);
  tcp_stream.expires_at(std::min(deadline, Clock::now() + limits.connect_timeout));
  if (auto [ec, ep] = co_await tcp_stream.async_connect(endpoints, kTuple); ec) {
    out.problem = phrase(ec, false);
    co_return out;
  }
  if (!url.tls) co_return co_await send_and_read(tcp_stream, url, request, limits, deadline);

  beast::ssl_stream<beast::tcp_stream> stream(std::move(tcp_stream), tls);
  // SNI names a DNS host only (RFC 6066: never an IP address); the certificate must carry the
  // name, or the address, either way.
  boost::system::error_code not_ip;
  asio::ip::make_address(url.host, not_ip);
  if (not_ip && !SSL_set_tlsext_host_name(stream.native_handle(), url.host.c_str())) {
    out.problem = "TLS (server name)";
    co_return out;
  }
  stream.set_verify_mode(asio::ssl::verify_peer);
  stream.set_verify_callback(asio::ssl::host_name_verification(url.host));
  beast::get_lowest_layer(stream).expires_at(deadline);
  if (auto [ec] = co_await stream.async_handshake(asio::ssl::stream_base::client, kTuple); ec) {
    out.problem = phrase(ec, Clock::now() >= deadline);
    co_return out;
  }
  out = co_await send_and_read(stream, url, request, limits, deadline);
  // The answer is read whole; a peer that does not close politely changes nothing.
  beast::get_lowest_layer(stream).expires_after(std::chrono::milliseconds(200));
  co_await stream.async_shutdown(kTuple);
  co_return out;
}

bool is_redirect(int status) {
  return status == 301 || status == 302 || status == 303 || status == 307 || status == 308;
}

}  // namespace

HttpsFetcher::HttpsFetcher(const std::string& ca_file) : tls_(asio::ssl::context::tls_client) {
  tls_.set_options(asio::ssl::context::default_workarounds | asio::ssl::context::no_sslv2 |
                   asio::ssl::context::no_sslv3 | asio::ssl::context::no_tlsv1 |
                   asio::ssl::context::no_tlsv1_1);
  boost::system::error_code ec;
  if (ca_file.empty())
    tls_.set_default_verify_paths(ec);
  else
    tls_.load_verify_file(ca_file, ec);
  if (ec)
    throw std::runtime_error(ca_file.empty() ? "cannot load the system's trust store"
                                             : "cannot read --oauth-ca-file as PEM certificates");
}

asio::awaitable<FetchResult> HttpsFetcher::fetch(asio::any_io_executor executor,
                                                 FetchRequest request, FetchLimits limits) {
  std::string problem;
  auto url = parse_http_url(request.url, problem);
  if (!url) co_return failed("bad URL: " + problem);
  const std::string origin = url->origin();
  auto deadline = Clock::now() + limits.total_timeout;
  for (int redirects = 0;; ++redirects) {
    Exchange got;
    try {
      got = co_await exchange(executor, tls_, *url, request, limits, deadline);
    } catch (const std::exception&) {
      co_return failed("network error");
    }
    if (!got.problem.empty()) co_return failed(got.problem, got.status);
    if (!is_redirect(got.status)) {
      if (got.status < 200 || got.status > 299)
        co_return failed("status " + std::to_string(got.status), got.status);
      co_return FetchResult{got.status, std::move(got.body), {}};
    }
    if (redirects >= limits.max_redirects) co_return failed("too many redirects", got.status);
    // A redirect is followed only within the origin first asked: a key set or a token must
    // never be fetched from, or sent to, a host the operator did not name.
    std::string next = got.location;
    if (!next.empty() && next.front() == '/' && (next.size() < 2 || next[1] != '/'))
      next = origin + next;
    auto moved = parse_http_url(next, problem);
    if (!moved || moved->origin() != origin)
      co_return failed("redirect to another origin", got.status);
    url = std::move(moved);
    // 303, and by long-standing custom 301/302, turn a POST into a GET: an introspection POST is
    // never redirected into a GET that would drop its form.
    if (!request.form_body.empty() && got.status != 307 && got.status != 308)
      co_return failed("redirect of a POST", got.status);
  }
}

}  // namespace sandgate::auth
