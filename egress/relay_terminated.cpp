// A relayed connection to a host carrying one of the tenant's secrets (issue #44;
// relay_connection.hpp): the proxy opens its own TLS to the host (verified: chain and name),
// answers the CONNECT, terminates the sandbox's TLS with a certificate the gateway CA issued for
// the host, then relays HTTP/1.1 requests one by one, each given the secret's header, and their
// answers, framed, so that the connection may be kept alive.
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <string_view>
#include <vector>

#include "egress/chunked_framing.hpp"
#include "egress/plain_request.hpp"
#include "egress/relay_connection.hpp"
#include "egress/terminated_request.hpp"
#include "egress/tls_termination.hpp"
#include "egress/upstream_connect.hpp"

namespace sandgate::egress {
namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;

namespace {

constexpr auto kTuple = asio::as_tuple(asio::use_awaitable);
constexpr std::size_t kHeadLimit = 16 * 1024;
constexpr std::size_t kAnswerHeadLimit = 64 * 1024;
constexpr std::size_t kChunk = 64 * 1024;
// Requests one kept-alive connection may carry; then the sandbox opens another.
constexpr std::size_t kRequestsPerConnection = 1000;

bool ended_cleanly(const boost::system::error_code& ec) {
  return ec == asio::error::eof || ec == asio::ssl::error::stream_truncated ||
         ec == http::error::end_of_stream;
}

}  // namespace

asio::awaitable<void> RelayConnection::relay_terminated(const ProxyTarget& target,
                                                        const HeaderSecret& secret,
                                                        beast::flat_buffer& buffer) {
  TlsTermination& termination = *relay_->config->termination;
  if (std::string why = termination.take_handshake(relay_->labels.tenant); !why.empty()) {
    co_await refuse(429, why);
    co_return;
  }
  HandshakePlace handshaking(termination, relay_->labels.tenant);
  TlsStream up(upstream_, termination.upstream_context());
  if (!co_await open_host_tls(up, target)) co_return;
  // Nothing may come before the 200: the sandbox's TLS starts after it.
  if (buffer.size() != 0) {
    co_await refuse(400, "bytes after the CONNECT request before its answer");
    co_return;
  }
  static constexpr std::string_view kEstablished = "HTTP/1.1 200 Connection established\r\n\r\n";
  auto said = co_await asio::async_write(client_, asio::buffer(kEstablished), kTuple);
  if (std::get<0>(said)) co_return;
  std::shared_ptr<asio::ssl::context> context;
  try {
    context = termination.server_context(relay_->labels.tenant, target.host);
  } catch (const std::exception&) {
    ended(ConnectionEnd::Kind::failed, "no certificate could be issued for the host");
    co_return;
  }
  TlsStream down(client_, *context);
  deadline_ = Clock::now() + relay_->config->step_timeout;  // the sandbox's handshake gets its own
  if (!co_await accept_sandbox_tls(down, target)) co_return;
  handshaking.release();
  secret_ = secret.name;
  co_await exchange(down, up, target, secret);
}

// The proxy's own TLS to the host: the system's store (or --egress-ca-file) must vouch for the
// chain, and the certificate must name the host (a DNS name, or an IP literal's address). A
// failure is a 502 with the reason; nothing is ever sent to the host without TLS.
asio::awaitable<bool> RelayConnection::open_host_tls(TlsStream& up, const ProxyTarget& target) {
  SSL* ssl = up.native_handle();
  X509_VERIFY_PARAM* param = SSL_get0_param(ssl);
  X509_VERIFY_PARAM_set_hostflags(param, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
  bool named = false;
  if (is_ip_literal(target.host)) {
    named = X509_VERIFY_PARAM_set1_ip_asc(param, target.host.c_str()) == 1;
  } else {
    named = SSL_set_tlsext_host_name(ssl, target.host.c_str()) == 1 &&
            X509_VERIFY_PARAM_set1_host(param, target.host.c_str(), 0) == 1;
  }
  if (!named) {
    co_await refuse(502, "cannot verify " + target.authority + "'s certificate by its name");
    co_return false;
  }
  auto shook = co_await up.async_handshake(asio::ssl::stream_base::client, kTuple);
  if (auto ec = std::get<0>(shook)) {
    if (timed_out_) {
      ended(ConnectionEnd::Kind::failed, "no TLS with the destination in time");
      co_return false;
    }
    long verdict = SSL_get_verify_result(ssl);
    std::string why = verdict != X509_V_OK
                          ? target.authority + "'s certificate is refused: " +
                                X509_verify_cert_error_string(verdict)
                          : "TLS with " + target.authority + " failed: " + ec.message();
    co_await refuse(502, why);
    co_return false;
  }
  co_return true;
}

// The sandbox's TLS, with a certificate for the host the CONNECT named; its ClientHello must name
// that host too (or none, for an IP literal), as for a tunnel.
asio::awaitable<bool> RelayConnection::accept_sandbox_tls(TlsStream& down,
                                                          const ProxyTarget& target) {
  auto shook = co_await down.async_handshake(asio::ssl::stream_base::server, kTuple);
  if (auto ec = std::get<0>(shook)) {
    ended(timed_out_ ? ConnectionEnd::Kind::failed : ConnectionEnd::Kind::refused,
          timed_out_ ? "no TLS handshake in time"
                     : "refused: the sandbox's TLS handshake failed (does it trust the "
                       "gateway's CA?)");
    co_return false;
  }
  const char* sni = SSL_get_servername(down.native_handle(), TLSEXT_NAMETYPE_host_name);
  std::optional<std::string> named =
      sni != nullptr ? normalise_host(sni) : std::optional<std::string>();
  bool matches = sni != nullptr ? named == target.host : is_ip_literal(target.host);
  if (!matches) {
    ended(ConnectionEnd::Kind::refused,
          "refused: the ClientHello names another server than the CONNECT");
    co_return false;
  }
  co_return true;
}

asio::awaitable<void> RelayConnection::exchange(TlsStream& down, TlsStream& up,
                                                const ProxyTarget& target,
                                                const HeaderSecret& secret) {
  beast::flat_buffer from_client, from_host;
  for (std::size_t served = 0;; ++served) {
    deadline_ = Clock::now() + relay_->config->idle_timeout;
    Parser parser;
    parser.header_limit(kHeadLimit);
    parser.body_limit(boost::none);
    auto read = co_await http::async_read_header(down, from_client, parser, kTuple);
    if (auto ec = std::get<0>(read)) {
      if (timed_out_) {
        outcome_ = "closed: idle";
      } else if (!ended_cleanly(ec) && !abandoned_ && (served == 0 || from_client.size() > 0)) {
        co_await refuse_in_tls(down, 400, "a malformed request");
      }
      co_return;
    }
    if (served == kRequestsPerConnection) {
      co_await refuse_in_tls(down, 429,
                             "this connection has carried " +
                                 std::to_string(kRequestsPerConnection) +
                                 " requests; open another");
      co_return;
    }
    const auto& request = parser.get();
    kind_ = std::string(request.method_string());
    if (auto refusal = terminated_request_refusal(request, target); refusal.status != 0) {
      co_await refuse_in_tls(down, refusal.status, refusal.reason);
      co_return;
    }
    if (std::string cap = relay_->bytes.cap_reached(); !cap.empty()) {
      co_await refuse_in_tls(down, 403, cap);
      co_return;
    }
    const std::uint64_t body = parser.content_length().value_or(0);
    if (body > relay_->policy->max_bytes_per_call) {
      co_await refuse_in_tls(down, 413,
                             "a request body larger than this call's egress byte cap (" +
                                 mib(relay_->policy->max_bytes_per_call) + ") is not proxied");
      co_return;
    }
    std::string head = plain_request_head(request, terminated_request_target(request, target),
                                          false, &secret, /*keep_alive=*/true);
    if (!charge(head.size(), true)) co_return;
    auto wrote = co_await asio::async_write(up, asio::buffer(head), kTuple);
    if (std::get<0>(wrote)) {
      ended(ConnectionEnd::Kind::failed, "the destination closed");
      co_return;
    }
    // The host is not asked to confirm (Expect was dropped): the sandbox may send its body now.
    auto expect = request.find(http::field::expect);
    if (expect != request.end() && beast::iequals(expect->value(), "100-continue")) {
      static constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
      auto said = co_await asio::async_write(down, asio::buffer(kContinue), kTuple);
      if (std::get<0>(said)) co_return;
    }
    if (!co_await copy_counted(down, up, from_client, body, true)) co_return;
    const bool keep =
        co_await relay_answer(down, up, from_host, request.method() == http::verb::head);
    if (!keep || !request.keep_alive()) co_return;
  }
}

// One answer from the host to the sandbox, as it came, to its end: by Content-Length, chunked
// framing, or the host's close. True when the connection may carry another request.
asio::awaitable<bool> RelayConnection::relay_answer(TlsStream& down, TlsStream& up,
                                                    beast::flat_buffer& from_host, bool head) {
  for (int informational = 0;; ++informational) {
    http::response_parser<http::empty_body> parser;
    parser.header_limit(kAnswerHeadLimit);
    parser.body_limit(boost::none);
    if (head) parser.skip(true);
    auto read = co_await http::async_read_header(up, from_host, parser, kTuple);
    if (auto ec = std::get<0>(read)) {
      ended(ConnectionEnd::Kind::failed,
            ended_cleanly(ec) ? "the destination closed" : "a malformed answer from the host");
      co_return false;
    }
    const auto& answer = parser.get();
    std::string text = "HTTP/1.1 " + std::to_string(answer.result_int()) + " " +
                       std::string(answer.reason()) + "\r\n";
    for (const auto& field : answer)
      text.append(field.name_string()).append(": ").append(field.value()).append("\r\n");
    text += "\r\n";
    if (!charge(text.size(), false)) co_return false;
    auto wrote = co_await asio::async_write(down, asio::buffer(text), kTuple);
    if (std::get<0>(wrote)) co_return false;
    const unsigned status = answer.result_int();
    if (status >= 100 && status < 200) {
      // 101 would switch protocols, which the proxy never asked for (Upgrade is dropped).
      if (status == 101 || informational == 8) co_return false;
      continue;
    }
    if (parser.is_done()) co_return parser.keep_alive() && from_host.size() == 0;
    if (parser.chunked()) {
      ChunkedFraming framing;
      std::vector<char> chunk(kChunk);
      for (;;) {
        std::size_t got = 0;
        if (from_host.size() > 0) {
          got = std::min(from_host.size(), chunk.size());
          asio::buffer_copy(asio::buffer(chunk.data(), got), from_host.data());
          from_host.consume(got);
        } else {
          auto more = co_await up.async_read_some(asio::buffer(chunk), kTuple);
          if (std::get<0>(more)) {
            ended(ConnectionEnd::Kind::failed, "the destination closed inside an answer");
            co_return false;
          }
          got = std::get<1>(more);
        }
        std::size_t take = framing.feed(chunk.data(), got);
        if (framing.malformed()) {
          ended(ConnectionEnd::Kind::failed, "a malformed chunked answer from the host");
          co_return false;
        }
        if (!charge(take, false)) co_return false;
        deadline_ = Clock::now() + relay_->config->idle_timeout;
        auto passed = co_await asio::async_write(down, asio::buffer(chunk.data(), take), kTuple);
        if (std::get<0>(passed)) co_return false;
        if (framing.done()) co_return take == got&& from_host.size() == 0 && parser.keep_alive();
      }
    }
    if (auto length = parser.content_length()) {
      if (!co_await copy_counted(up, down, from_host, *length, false)) co_return false;
      co_return parser.keep_alive() && from_host.size() == 0;
    }
    // Ended by the host's close: relayed until then, and the connection with it.
    co_await copy_counted(up, down, from_host, UINT64_MAX, false);
    co_return false;
  }
}

// `left` bytes (or, with UINT64_MAX, until the sender closes) from `pending` and then `from`,
// to `to`, each counted; false when the exchange cannot go on.
asio::awaitable<bool> RelayConnection::copy_counted(TlsStream& from, TlsStream& to,
                                                    beast::flat_buffer& pending, std::uint64_t left,
                                                    bool upward) {
  std::vector<char> chunk(kChunk);
  while (left > 0) {
    std::size_t got = 0;
    const std::size_t want = static_cast<std::size_t>(std::min<std::uint64_t>(left, chunk.size()));
    if (pending.size() > 0) {
      got = std::min(pending.size(), want);
      asio::buffer_copy(asio::buffer(chunk.data(), got), pending.data());
      pending.consume(got);
    } else {
      auto more = co_await from.async_read_some(asio::buffer(chunk.data(), want), kTuple);
      if (auto ec = std::get<0>(more)) {
        if (left == UINT64_MAX && ended_cleanly(ec)) co_return true;
        if (!timed_out_ && !abandoned_)
          ended(ConnectionEnd::Kind::failed,
                upward ? "the sandbox closed inside a request" : "the destination closed");
        co_return false;
      }
      got = std::get<1>(more);
    }
    if (!charge(got, upward)) co_return false;
    deadline_ = Clock::now() + relay_->config->idle_timeout;
    auto wrote = co_await asio::async_write(to, asio::buffer(chunk.data(), got), kTuple);
    if (std::get<0>(wrote)) co_return false;
    if (left != UINT64_MAX) left -= got;
  }
  co_return true;
}

// A refusal inside the terminated TLS: an HTTP error whose status line and body say why, and
// the connection closed.
asio::awaitable<void> RelayConnection::refuse_in_tls(TlsStream& down, int status,
                                                     const std::string& reason) {
  ended(ConnectionEnd::Kind::refused, "refused: " + reason);
  std::string body = "sandgate egress: " + reason + "\n";
  std::string text = "HTTP/1.1 " + std::to_string(status) + " " + reason +
                     "\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: " +
                     std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" + body;
  deadline_ = Clock::now() + relay_->config->step_timeout;
  co_await asio::async_write(down, asio::buffer(text), kTuple);
  co_await down.async_shutdown(kTuple);
}

}  // namespace sandgate::egress
