// One client connection of the egress relay: read one proxy request, decide, connect, relay
// (relay_connection.hpp).
#include "egress/relay_connection.hpp"

#include <algorithm>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/http/read.hpp>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "common/logging.hpp"
#include "egress/client_hello.hpp"
#include "egress/plain_request.hpp"
#include "egress/upstream_connect.hpp"

namespace sandgate::egress {
namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using namespace asio::experimental::awaitable_operators;

namespace {

constexpr auto kTuple = asio::as_tuple(asio::use_awaitable);
constexpr std::size_t kHeadLimit = 16 * 1024;
constexpr std::size_t kRelayChunk = 64 * 1024;

// Reads of a tunnel's first bytes before its ClientHello must be whole: a real one comes in one
// or two, and each read parses all that came so far.
constexpr int kClientHelloReads = 32;

// Far sides being opened (a name looked up, an address connected) at once per sandbox.
constexpr std::uint32_t kLookupsPerSandbox = 2;

// Counts one use of `count` for as long as it lives (or until release()): the counters stay right
// whichever way a coroutine leaves.
template <class Count>
class Counted {
 public:
  explicit Counted(Count& count) : count_(&count) { ++*count_; }
  ~Counted() { release(); }
  Counted(const Counted&) = delete;
  Counted& operator=(const Counted&) = delete;
  void release() {
    if (count_ != nullptr) --*std::exchange(count_, nullptr);
  }

 private:
  Count* count_;
};

}  // namespace

RelayContext::RelayContext(asio::any_io_executor executor,
                           std::shared_ptr<const TenantEgress> tenant_policy,
                           std::shared_ptr<RelayAccount> relay_account,
                           std::shared_ptr<const ProxyConfig> proxy_config,
                           std::shared_ptr<ConnectionShares> tenant_shares,
                           RelayLabels relay_labels, ConnectionObserver connection_observer)
    : strand(asio::make_strand(executor)),
      policy(tenant_policy),
      config(std::move(proxy_config)),
      shares(std::move(tenant_shares)),
      labels(std::move(relay_labels)),
      observer(std::move(connection_observer)),
      account(relay_account),
      bytes(std::move(tenant_policy), std::move(relay_account)) {}

RelayConnection::RelayConnection(std::shared_ptr<RelayContext> context, tcp::socket client)
    : relay_(std::move(context)),
      client_(std::move(client)),
      upstream_(relay_->strand),
      timer_(relay_->strand) {}

void RelayConnection::start() {
  asio::co_spawn(relay_->strand, serve(shared_from_this()), asio::detached);
}

void RelayConnection::abandon() {
  if (outcome_ == "relayed") outcome_ = "closed: the sandbox ended";
  abandoned_ = true;
  close();
}

void RelayConnection::ended(ConnectionEnd::Kind how, std::string why) {
  end_ = how;
  outcome_ = std::move(why);
  // The call's report says it at once (a refusal is final before its drain ends).
  if (relay_->log)
    relay_->log->update(record_, [&](ConnectionLog::Entry& entry) {
      entry.outcome = connection_end_name(how);
      entry.reason = outcome_;
    });
}

void RelayConnection::close() {
  boost::system::error_code ignored;
  client_.close(ignored);
  upstream_.close(ignored);
}

// Closes the connection's sockets when its deadline passes with the step it guards undone.
asio::awaitable<void> RelayConnection::watch(
    [[maybe_unused]] std::shared_ptr<RelayConnection> self) {
  while (!done_) {
    timer_.expires_at(deadline_);
    co_await timer_.async_wait(kTuple);
    if (done_) break;
    if (Clock::now() >= deadline_) {
      timed_out_ = true;
      abandoned_ = true;
      close();
      break;
    }
  }
}

asio::awaitable<void> RelayConnection::serve(std::shared_ptr<RelayConnection> self) {
  deadline_ = Clock::now() + relay_->config->step_timeout;
  call_ = relay_->account ? relay_->account->call_number() : 0;
  asio::co_spawn(relay_->strand, watch(self), asio::detached);
  Counted serving(relay_->serving);
  const auto& policy = *relay_->policy;
  if (relay_->active >= policy.max_connections) {
    std::string why = "this sandbox already has its " + std::to_string(policy.max_connections) +
                      " egress connections open";
    co_await refuse(429, why);
  } else if (std::string why = relay_->shares->take(relay_->labels.tenant); !why.empty()) {
    co_await refuse(429, why);
  } else {
    SharePlace place(*relay_->shares, relay_->labels.tenant);
    Counted active(relay_->active);
    co_await relay();
  }
  done_ = true;
  timer_.cancel();
  close();
  log();
  if (relay_->log)
    relay_->log->update(record_, [&](ConnectionLog::Entry& entry) {
      entry.method = kind_;
      entry.outcome = connection_end_name(end_);
      entry.reason = outcome_ == "relayed" ? "" : outcome_;
      entry.secret = secret_ == "-" ? "" : secret_;
      entry.bytes_up = up_;
      entry.bytes_down = down_;
    });
  if (relay_->observer) {
    ConnectionEnd end;
    end.kind = end_;
    end.bytes_up = up_;
    end.bytes_down = down_;
    end.labels = &relay_->labels;
    end.method = kind_;
    end.host = host_;
    end.port = port_;
    end.reason = outcome_ == "relayed" ? "" : outcome_;
    end.secret = secret_ == "-" ? "" : secret_;
    end.started = started_wall_;
    end.duration = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - started_);
    relay_->observer(end);
  }
}

asio::awaitable<void> RelayConnection::relay() {
  beast::flat_buffer buffer;
  Parser parser;
  if (!co_await read_head(buffer, parser)) co_return;
  // The next steps (name lookup and connect) get a deadline of their own.
  deadline_ = Clock::now() + relay_->config->step_timeout;
  const auto& request = parser.get();
  const bool tunnel = request.method() == http::verb::connect;
  kind_ = tunnel ? "CONNECT" : std::string(request.method_string());
  const std::optional<ProxyTarget> target = co_await admit(parser, tunnel);
  if (!target) co_return;
  // A host carrying one of the tenant's secrets: its TLS is terminated here (and only then).
  const HeaderSecret* secret = tunnel && relay_->config->termination
                                   ? relay_->policy->secret_for(target->host, target->port, 443)
                                   : nullptr;
  if (!co_await open_far_side(*target)) co_return;
  // Each chunk goes on as it came: the endpoints decide how their bytes are batched. With
  // Nagle's algorithm here, an answer's second write (its body after its head) would wait for
  // the client's delayed ACK, 40 ms per request on a kept-alive connection.
  boost::system::error_code ignored;
  client_.set_option(tcp::no_delay(true), ignored);
  upstream_.set_option(tcp::no_delay(true), ignored);
  deadline_ = Clock::now() + relay_->config->step_timeout;
  if (secret != nullptr)
    co_await relay_terminated(*target, *secret, buffer);
  else if (tunnel)
    co_await relay_tunnel(*target, buffer);
  else
    co_await relay_plain(parser, *target, buffer);
}

// The request's head into `parser` (what came after it stays in `buffer`); false when none came.
asio::awaitable<bool> RelayConnection::read_head(beast::flat_buffer& buffer, Parser& parser) {
  parser.header_limit(kHeadLimit);
  // The body is relayed, never held: its size is bounded by the byte caps, not by Beast's
  // default (1 MiB, which would call a larger upload malformed).
  parser.body_limit(boost::none);
  auto read = co_await http::async_read_header(client_, buffer, parser, kTuple);
  if (!std::get<0>(read)) co_return true;
  ended(ConnectionEnd::Kind::failed, timed_out_ ? "no request in time" : "no request");
  if (!timed_out_ && std::get<0>(read) != asio::error::eof) {
    std::string why = "a malformed proxy request";
    co_await refuse(400, why);
  }
  co_return false;
}

// The request's target when it may be relayed; else its refusal is written and nullopt.
asio::awaitable<std::optional<ProxyTarget>> RelayConnection::admit(const Parser& parser,
                                                                   bool tunnel) {
  auto parsed = parse_proxy_target(tunnel, parser.get().target());
  if (auto* why = std::get_if<std::string>(&parsed)) {
    co_await refuse(400, *why);
    co_return std::nullopt;
  }
  const ProxyTarget target = std::get<ProxyTarget>(parsed);
  host_ = target.host;
  port_ = target.port;
  if (relay_->log) record_ = relay_->log->open(call_, kind_, host_, port_);
  if (const std::optional<Refusal> refusal = refusal_of(parser, target, tunnel)) {
    co_await refuse(refusal->status, refusal->reason);
    co_return std::nullopt;
  }
  co_return target;
}

// Why a request for `target` may not be relayed (its status and reason), in the order they are
// checked; nullopt when it may.
std::optional<RelayConnection::Refusal> RelayConnection::refusal_of(const Parser& parser,
                                                                    const ProxyTarget& target,
                                                                    bool tunnel) {
  const auto& policy = *relay_->policy;
  if (!policy.allowed.allows(target.host, target.port, tunnel ? 443 : 80))
    return Refusal{403, target.authority + " is not on this tenant's egress allow-list"};
  // One request per plain connection, its body framed by Content-Length: what follows it is
  // never relayed (a far side that ignored `Connection: close` would otherwise serve a second
  // request, for another Host, on a connection allowed for the first).
  // (plain_request_refusal: no Transfer-Encoding, no Connection naming a framing header.)
  if (std::string why = tunnel ? "" : plain_request_refusal(parser.get()); !why.empty())
    return Refusal{400, why};
  // A secret for HTTPS only is never sent in the clear (issue #44).
  const HeaderSecret* secret = tunnel ? nullptr : policy.secret_for(target.host, target.port, 80);
  if (secret != nullptr && !secret->plain_http)
    return Refusal{403, target.authority +
                            " carries a secret for HTTPS only; plain HTTP to it is not proxied"};
  if (std::string cap = relay_->bytes.cap_reached(); !cap.empty()) return Refusal{403, cap};
  if (!tunnel && parser.content_length().value_or(0) > policy.max_bytes_per_call)
    return Refusal{413, "a request body larger than this call's egress byte cap (" +
                            mib(policy.max_bytes_per_call) + ") is not proxied"};
  return std::nullopt;
}

// The destination (or the upstream proxy) connected in `upstream_`; false when it is not (the
// refusal written, or the connection's outcome says why).
asio::awaitable<bool> RelayConnection::open_far_side(const ProxyTarget& target) {
  UpstreamRequest want{target.host, target.port, target.tunnel, target.authority};
  // A sandbox's connections look names up two at a time: the lookup threads are the whole
  // gateway's, and one sandbox asking for a name nobody answers holds at most two of them.
  while (relay_->lookups >= kLookupsPerSandbox && !abandoned_) {
    asio::steady_timer pause(relay_->strand, std::chrono::milliseconds(20));
    co_await pause.async_wait(kTuple);
  }
  if (abandoned_) {
    ended(ConnectionEnd::Kind::failed, "no connection in time");
    co_return false;
  }
  Counted looking_up(relay_->lookups);
  auto opened =
      co_await open_upstream(upstream_, want, relay_->policy->allowed, *relay_->config, abandoned_);
  looking_up.release();
  if (timed_out_) {
    ended(ConnectionEnd::Kind::failed, "no connection in time");
    co_return false;
  }
  if (!opened.reason.empty()) {
    co_await refuse(opened.status, opened.reason);
    co_return false;
  }
  co_return true;
}

asio::awaitable<void> RelayConnection::relay_tunnel(const ProxyTarget& target,
                                                    beast::flat_buffer& buffer) {
  if (!co_await open_tunnel(target, buffer)) co_return;
  deadline_ = Clock::now() + relay_->config->idle_timeout;
  auto up = pump(true);
  auto down = pump(false);
  co_await (std::move(up) && std::move(down));
  if (timed_out_) outcome_ = "closed: idle";
}

// Says 200, then holds the tunnel until the client's ClientHello shows which server it asks
// for: the name the CONNECT was allowed for, or (a literal address) none or that address.
asio::awaitable<bool> RelayConnection::open_tunnel(const ProxyTarget& target,
                                                   beast::flat_buffer& buffer) {
  static constexpr std::string_view kEstablished = "HTTP/1.1 200 Connection established\r\n\r\n";
  auto said = co_await asio::async_write(client_, asio::buffer(kEstablished), kTuple);
  if (std::get<0>(said)) co_return false;
  auto pending = buffer.data();
  std::vector<unsigned char> hello(
      static_cast<const unsigned char*>(pending.data()),
      static_cast<const unsigned char*>(pending.data()) + pending.size());
  ClientHello parsed = parse_client_hello(hello);
  std::vector<unsigned char> chunk(4096);
  // A ClientHello dripped in tiny records is re-parsed after every read: bounded, so that
  // the parsing stays linear in practice (a real one is a record or two).
  constexpr std::size_t kMaxHelloInput = kMaxClientHelloBytes + 16 * 1024;
  for (int reads = 0; parsed.state == ClientHello::State::incomplete; ++reads) {
    if (hello.size() > kMaxHelloInput || reads == kClientHelloReads) {
      parsed.state = ClientHello::State::not_tls;
      break;
    }
    auto got = co_await client_.async_read_some(asio::buffer(chunk), kTuple);
    if (std::get<0>(got)) {
      ended(ConnectionEnd::Kind::failed,
            timed_out_ ? "no ClientHello in time" : "closed before its ClientHello");
      co_return false;
    }
    hello.insert(hello.end(), chunk.begin(), chunk.begin() + std::get<1>(got));
    parsed = parse_client_hello(hello);
  }
  if (parsed.state == ClientHello::State::not_tls) {
    ended(ConnectionEnd::Kind::refused, "refused: the tunnel did not start with a TLS ClientHello");
    co_return false;
  }
  bool matches =
      parsed.server_name ? *parsed.server_name == target.host : is_ip_literal(target.host);
  if (!matches) {
    ended(ConnectionEnd::Kind::refused,
          "refused: the ClientHello names another server than the CONNECT");
    co_return false;
  }
  if (!charge(hello.size(), true)) co_return false;
  auto forwarded = co_await asio::async_write(upstream_, asio::buffer(hello), kTuple);
  if (std::get<0>(forwarded)) {
    ended(ConnectionEnd::Kind::failed, "the destination closed");
    co_return false;
  }
  co_return true;
}

// The request's head, and as much of its body as came with it, to the far side; then the rest
// of the body up and the answer down.
asio::awaitable<void> RelayConnection::relay_plain(const Parser& parser, const ProxyTarget& target,
                                                   beast::flat_buffer& buffer) {
  const HeaderSecret* secret = relay_->policy->secret_for(target.host, target.port, 80);
  if (secret != nullptr) secret_ = secret->name;
  std::string head =
      plain_request_head(parser.get(), target, relay_->config->upstream.has_value(), secret);
  std::uint64_t body = parser.content_length().value_or(0);
  auto pending = buffer.data();
  std::size_t taken = static_cast<std::size_t>(std::min<std::uint64_t>(pending.size(), body));
  std::string first = head + std::string(static_cast<const char*>(pending.data()), taken);
  if (!charge(first.size(), true)) co_return;
  auto wrote = co_await asio::async_write(upstream_, asio::buffer(first), kTuple);
  if (std::get<0>(wrote)) {
    ended(ConnectionEnd::Kind::failed, "the destination closed");
    co_return;
  }
  deadline_ = Clock::now() + relay_->config->idle_timeout;
  auto rest_of_body = copy_exactly(body - taken);
  auto answer = pump(false);
  co_await (std::move(rest_of_body) && std::move(answer));
  if (timed_out_) outcome_ = "closed: idle";
}

// The rest of a plain request's body, `left` bytes, from the client to the destination; then
// nothing more of the client's is read.
asio::awaitable<void> RelayConnection::copy_exactly(std::uint64_t left) {
  std::vector<char> chunk(kRelayChunk);
  while (left > 0) {
    std::size_t want = static_cast<std::size_t>(std::min<std::uint64_t>(left, chunk.size()));
    auto got = co_await client_.async_read_some(asio::buffer(chunk.data(), want), kTuple);
    if (std::get<0>(got)) {
      close();
      co_return;
    }
    std::size_t n = std::get<1>(got);
    if (!charge(n, true)) {
      close();
      co_return;
    }
    deadline_ = Clock::now() + relay_->config->idle_timeout;
    auto wrote = co_await asio::async_write(upstream_, asio::buffer(chunk.data(), n), kTuple);
    if (std::get<0>(wrote)) {
      close();
      co_return;
    }
    left -= n;
  }
}

// Copies one direction until it ends; an end of the client's sending (or the destination's)
// is passed on as such, so that a half-closed exchange completes.
asio::awaitable<void> RelayConnection::pump(bool upward) {
  tcp::socket& from = upward ? client_ : upstream_;
  tcp::socket& to = upward ? upstream_ : client_;
  std::vector<char> chunk(kRelayChunk);
  for (;;) {
    auto got = co_await from.async_read_some(asio::buffer(chunk), kTuple);
    if (auto ec = std::get<0>(got)) {
      boost::system::error_code ignored;
      if (ec == asio::error::eof)
        to.shutdown(tcp::socket::shutdown_send, ignored);
      else
        close();
      co_return;
    }
    std::size_t n = std::get<1>(got);
    if (!charge(n, upward)) {
      close();
      co_return;
    }
    deadline_ = Clock::now() + relay_->config->idle_timeout;
    auto wrote = co_await asio::async_write(to, asio::buffer(chunk.data(), n), kTuple);
    if (std::get<0>(wrote)) {
      close();
      co_return;
    }
  }
}

// Counts `n` bytes against the caps and charges them; false (and why, in the connection's
// outcome) when they may not pass.
bool RelayConnection::charge(std::size_t n, bool upward) {
  if (std::string why = relay_->bytes.charge(n); !why.empty()) {
    ended(ConnectionEnd::Kind::capped, std::move(why));
    return false;
  }
  (upward ? up_ : down_) += n;
  return true;
}

// An HTTP error with the reason as its status line's phrase (what pip and npm print) and body.
asio::awaitable<void> RelayConnection::refuse(int status, const std::string& reason) {
  ended(ConnectionEnd::Kind::refused, "refused: " + reason);
  std::string body = "sandgate egress: " + reason + "\n";
  std::string text = "HTTP/1.1 " + std::to_string(status) + " " + reason +
                     "\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: " +
                     std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" + body;
  deadline_ = Clock::now() + relay_->config->step_timeout;
  co_await asio::async_write(client_, asio::buffer(text), kTuple);
  boost::system::error_code ignored;
  client_.shutdown(tcp::socket::shutdown_send, ignored);
  // What the client still sends is read (a little, briefly) before the close: closing with
  // unread bytes would reset the connection, and the client could lose the answer unread.
  deadline_ = Clock::now() + std::chrono::seconds(2);
  timer_.cancel();  // the watchdog waits for the new, nearer deadline
  std::vector<char> drain(4096);
  for (int reads = 0; reads < 16; ++reads) {
    auto got = co_await client_.async_read_some(asio::buffer(drain), kTuple);
    if (std::get<0>(got)) break;
  }
}

void RelayConnection::log() const {
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - started_);
  const auto& labels = relay_->labels;
  log_event(LogLevel::info, "egress_connection",
            {{"tenant", labels.tenant},
             {"session", labels.session},
             {"sandbox", labels.sandbox},
             {"method", kind_},
             {"host", host_},
             {"port", port_},
             {"bytes_up", up_},
             {"bytes_down", down_},
             {"duration_ms", ms.count()},
             {"outcome", outcome_},
             {"secret", secret_}});
}

}  // namespace sandgate::egress
