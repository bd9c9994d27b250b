// The egress relay: accept, read one proxy request, decide, connect, relay (relay.hpp).
#include "egress/relay.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <optional>
#include <utility>
#include <variant>
#include <vector>

#include "common/logging.hpp"
#include "egress/client_hello.hpp"
#include "egress/plain_request.hpp"
#include "egress/proxy_request.hpp"
#include "egress/upstream_connect.hpp"

namespace sandgate::egress {
namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using namespace asio::experimental::awaitable_operators;

namespace {

constexpr auto kTuple = asio::as_tuple(asio::use_awaitable);
using Clock = std::chrono::steady_clock;
constexpr std::size_t kHeadLimit = 16 * 1024;
constexpr std::size_t kRelayChunk = 64 * 1024;

std::string mib(std::uint64_t bytes) {
  return std::to_string(bytes >> 20) + " MiB";
}

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

// One client connection and, once opened, its destination (or the upstream proxy).
struct Connection {
  explicit Connection(const asio::any_io_executor& executor)
      : client(executor), upstream(executor), timer(executor) {}
  tcp::socket client;
  tcp::socket upstream;
  asio::steady_timer timer;      // the watchdog's (watch)
  Clock::time_point deadline{};  // closed when reached with nothing done
  bool done = false;
  bool timed_out = false;
  bool abandoned = false;  // timed out, or its relay stopped: no step may start again
  Clock::time_point started = Clock::now();
  std::string kind = "-";  // CONNECT or the plain request's method
  std::string host = "-";
  std::uint16_t port = 0;
  std::uint64_t up = 0, down = 0;  // client to destination, destination to client
  std::string outcome = "relayed";
  ConnectionEnd::Kind end = ConnectionEnd::Kind::relayed;
  void ended(ConnectionEnd::Kind how, std::string why) {
    end = how;
    outcome = std::move(why);
  }
  void close() {
    boost::system::error_code ignored;
    client.close(ignored);
    upstream.close(ignored);
  }
};

class RelayImpl final : public Relay, public std::enable_shared_from_this<RelayImpl> {
 public:
  RelayImpl(asio::any_io_executor executor, std::shared_ptr<const TenantEgress> policy,
            std::shared_ptr<RelayAccount> account, std::shared_ptr<const ProxyConfig> config,
            std::shared_ptr<ConnectionShares> shares, RelayLabels labels,
            ConnectionObserver observer)
      : strand_(asio::make_strand(executor)),
        acceptor_(strand_),
        policy_(std::move(policy)),
        account_(std::move(account)),
        config_(std::move(config)),
        shares_(std::move(shares)),
        labels_(std::move(labels)),
        observer_(std::move(observer)) {}

  void begin(UniqueFd listener) {
    boost::system::error_code ec;
    acceptor_.assign(tcp::v4(), listener.get(), ec);
    if (!ec) listener.release();  // the acceptor's now; on failure `listener` closes it
    if (ec) {
      log_event(LogLevel::warn, "egress_listener_unusable",
                {{"sandbox", labels_.sandbox}, {"error", ec.message()}});
      return;
    }
    asio::co_spawn(strand_, accept_loop(shared_from_this()), asio::detached);
  }

  void stop() override {
    asio::post(strand_, [self = shared_from_this()] { self->stop_now(); });
  }

 private:
  void stop_now() {
    stopped_ = true;
    boost::system::error_code ignored;
    acceptor_.close(ignored);
    for (auto& weak : live_)
      if (auto connection = weak.lock()) {
        if (connection->outcome == "relayed") connection->outcome = "closed: the sandbox ended";
        connection->abandoned = true;
        connection->close();
      }
    live_.clear();
  }

  asio::awaitable<void> accept_loop(std::shared_ptr<RelayImpl> self) {
    while (!stopped_) {
      auto accepted = co_await acceptor_.async_accept(kTuple);
      if (stopped_) break;
      auto ec = std::get<0>(accepted);
      if (ec == asio::error::operation_aborted || !acceptor_.is_open()) break;
      if (ec) {
        // Out of descriptors or memory, a connection reset before it was taken: wait a little
        // rather than spin.
        asio::steady_timer pause(strand_, std::chrono::milliseconds(100));
        co_await pause.async_wait(kTuple);
        continue;
      }
      // Beyond what this sandbox may have answered at once: closed unanswered, so that a flood
      // of connections cannot hold the gateway's descriptors waiting for their refusals to be
      // written. (The gateway-wide cap and the tenant's share of it are answered: serve.)
      if (serving_ >= 2 * policy_->max_connections + 8) {
        boost::system::error_code ignored;
        std::get<1>(accepted).close(ignored);
        continue;
      }
      auto connection = std::make_shared<Connection>(strand_);
      connection->client = std::move(std::get<1>(accepted));
      std::erase_if(live_, [](const auto& weak) { return weak.expired(); });
      live_.push_back(connection);
      asio::co_spawn(strand_, serve(self, connection), asio::detached);
    }
  }

  // Closes the connection's sockets when its deadline passes with the step it guards undone.
  static asio::awaitable<void> watch(std::shared_ptr<Connection> c) {
    while (!c->done) {
      c->timer.expires_at(c->deadline);
      co_await c->timer.async_wait(kTuple);
      if (c->done) break;
      if (Clock::now() >= c->deadline) {
        c->timed_out = true;
        c->abandoned = true;
        c->close();
        break;
      }
    }
  }

  // `self` keeps the relay alive while one of its connections is served.
  asio::awaitable<void> serve([[maybe_unused]] std::shared_ptr<RelayImpl> self,
                              std::shared_ptr<Connection> c) {
    c->deadline = Clock::now() + config_->step_timeout;
    asio::co_spawn(strand_, watch(c), asio::detached);
    Counted serving(serving_);
    if (active_ >= policy_->max_connections) {
      std::string why = "this sandbox already has its " + std::to_string(policy_->max_connections) +
                        " egress connections open";
      co_await refuse(*c, 429, why);
    } else if (std::string why = shares_->take(labels_.tenant); !why.empty()) {
      co_await refuse(*c, 429, why);
    } else {
      SharePlace place(*shares_, labels_.tenant);
      Counted active(active_);
      co_await relay(*c);
    }
    c->done = true;
    c->timer.cancel();
    c->close();
    log(*c);
    if (observer_) observer_(ConnectionEnd{c->end, c->up, c->down});
  }

  asio::awaitable<void> relay(Connection& c) {
    beast::flat_buffer buffer;
    http::request_parser<http::empty_body> parser;
    parser.header_limit(kHeadLimit);
    // The body is relayed, never held: its size is bounded by the byte caps below, not by
    // Beast's default (1 MiB, which would call a larger upload malformed).
    parser.body_limit(boost::none);
    auto read = co_await http::async_read_header(c.client, buffer, parser, kTuple);
    if (std::get<0>(read)) {
      c.ended(ConnectionEnd::Kind::failed, c.timed_out ? "no request in time" : "no request");
      if (!c.timed_out && std::get<0>(read) != asio::error::eof) {
        std::string why = "a malformed proxy request";
        co_await refuse(c, 400, why);
      }
      co_return;
    }
    // The next steps (name lookup and connect) get a deadline of their own.
    c.deadline = Clock::now() + config_->step_timeout;
    const auto& request = parser.get();
    const bool tunnel = request.method() == http::verb::connect;
    c.kind = tunnel ? "CONNECT" : std::string(request.method_string());
    auto parsed = parse_proxy_target(tunnel, request.target());
    if (auto* why = std::get_if<std::string>(&parsed)) {
      co_await refuse(c, 400, *why);
      co_return;
    }
    const ProxyTarget target = std::get<ProxyTarget>(parsed);
    c.host = target.host;
    c.port = target.port;
    if (!policy_->allowed.allows(target.host, target.port, tunnel ? 443 : 80)) {
      std::string why = target.authority + " is not on this tenant's egress allow-list";
      co_await refuse(c, 403, why);
      co_return;
    }
    // One request per plain connection, its body framed by Content-Length: what follows it is
    // never relayed (a far side that ignored `Connection: close` would otherwise serve a second
    // request, for another Host, on a connection allowed for the first).
    // (plain_request_refusal: no Transfer-Encoding, no Connection naming a framing header.)
    if (std::string why = tunnel ? "" : plain_request_refusal(request); !why.empty()) {
      co_await refuse(c, 400, why);
      co_return;
    }
    if (std::string cap = cap_reached(); !cap.empty()) {
      co_await refuse(c, 403, cap);
      co_return;
    }
    if (!tunnel && parser.content_length().value_or(0) > policy_->max_bytes_per_call) {
      std::string why = "a request body larger than this call's egress byte cap (" +
                        mib(policy_->max_bytes_per_call) + ") is not proxied";
      co_await refuse(c, 413, why);
      co_return;
    }
    UpstreamRequest want{target.host, target.port, target.tunnel, target.authority};
    // A sandbox's connections look names up two at a time: the lookup threads are the whole
    // gateway's, and one sandbox asking for a name nobody answers holds at most two of them.
    while (lookups_ >= kLookupsPerSandbox && !c.abandoned) {
      asio::steady_timer pause(strand_, std::chrono::milliseconds(20));
      co_await pause.async_wait(kTuple);
    }
    if (c.abandoned) {
      c.ended(ConnectionEnd::Kind::failed, "no connection in time");
      co_return;
    }
    Counted looking_up(lookups_);
    auto opened = co_await open_upstream(c.upstream, want, policy_->allowed, *config_, c.abandoned);
    looking_up.release();
    if (c.timed_out) {
      c.ended(ConnectionEnd::Kind::failed, "no connection in time");
      co_return;
    }
    if (!opened.reason.empty()) {
      co_await refuse(c, opened.status, opened.reason);
      co_return;
    }
    c.deadline = Clock::now() + config_->step_timeout;
    if (tunnel) {
      if (!co_await open_tunnel(c, target, buffer)) co_return;
    } else {
      std::string head = plain_request_head(request, target, config_->upstream.has_value());
      std::uint64_t body = parser.content_length().value_or(0);
      auto pending = buffer.data();
      std::size_t taken = static_cast<std::size_t>(std::min<std::uint64_t>(pending.size(), body));
      std::string first = head + std::string(static_cast<const char*>(pending.data()), taken);
      if (!charge(c, first.size(), true)) co_return;
      auto wrote = co_await asio::async_write(c.upstream, asio::buffer(first), kTuple);
      if (std::get<0>(wrote)) {
        c.ended(ConnectionEnd::Kind::failed, "the destination closed");
        co_return;
      }
      c.deadline = Clock::now() + config_->idle_timeout;
      auto rest_of_body = copy_exactly(c, body - taken);
      auto answer = pump(c, false);
      co_await (std::move(rest_of_body) && std::move(answer));
      if (c.timed_out) c.outcome = "closed: idle";
      co_return;
    }
    c.deadline = Clock::now() + config_->idle_timeout;
    auto up = pump(c, true);
    auto down = pump(c, false);
    co_await (std::move(up) && std::move(down));
    if (c.timed_out) c.outcome = "closed: idle";
  }

  // The rest of a plain request's body, `left` bytes, from the client to the destination; then
  // nothing more of the client's is read.
  asio::awaitable<void> copy_exactly(Connection& c, std::uint64_t left) {
    std::vector<char> chunk(kRelayChunk);
    while (left > 0) {
      std::size_t want = static_cast<std::size_t>(std::min<std::uint64_t>(left, chunk.size()));
      auto got = co_await c.client.async_read_some(asio::buffer(chunk.data(), want), kTuple);
      if (std::get<0>(got)) {
        c.close();
        co_return;
      }
      std::size_t n = std::get<1>(got);
      if (!charge(c, n, true)) {
        c.close();
        co_return;
      }
      c.deadline = Clock::now() + config_->idle_timeout;
      auto wrote = co_await asio::async_write(c.upstream, asio::buffer(chunk.data(), n), kTuple);
      if (std::get<0>(wrote)) {
        c.close();
        co_return;
      }
      left -= n;
    }
  }

  // Says 200, then holds the tunnel until the client's ClientHello shows which server it asks
  // for: the name the CONNECT was allowed for, or (a literal address) none or that address.
  asio::awaitable<bool> open_tunnel(Connection& c, const ProxyTarget& target,
                                    beast::flat_buffer& buffer) {
    static constexpr std::string_view kEstablished = "HTTP/1.1 200 Connection established\r\n\r\n";
    auto said = co_await asio::async_write(c.client, asio::buffer(kEstablished), kTuple);
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
      auto got = co_await c.client.async_read_some(asio::buffer(chunk), kTuple);
      if (std::get<0>(got)) {
        c.ended(ConnectionEnd::Kind::failed,
                c.timed_out ? "no ClientHello in time" : "closed before its ClientHello");
        co_return false;
      }
      hello.insert(hello.end(), chunk.begin(), chunk.begin() + std::get<1>(got));
      parsed = parse_client_hello(hello);
    }
    if (parsed.state == ClientHello::State::not_tls) {
      c.ended(ConnectionEnd::Kind::refused,
              "refused: the tunnel did not start with a TLS ClientHello");
      co_return false;
    }
    bool matches =
        parsed.server_name ? *parsed.server_name == target.host : is_ip_literal(target.host);
    if (!matches) {
      c.ended(ConnectionEnd::Kind::refused,
              "refused: the ClientHello names another server than the CONNECT");
      co_return false;
    }
    if (!charge(c, hello.size(), true)) co_return false;
    auto forwarded = co_await asio::async_write(c.upstream, asio::buffer(hello), kTuple);
    if (std::get<0>(forwarded)) {
      c.ended(ConnectionEnd::Kind::failed, "the destination closed");
      co_return false;
    }
    co_return true;
  }

  // Copies one direction until it ends; an end of the client's sending (or the destination's)
  // is passed on as such, so that a half-closed exchange completes.
  asio::awaitable<void> pump(Connection& c, bool upward) {
    tcp::socket& from = upward ? c.client : c.upstream;
    tcp::socket& to = upward ? c.upstream : c.client;
    std::vector<char> chunk(kRelayChunk);
    for (;;) {
      auto got = co_await from.async_read_some(asio::buffer(chunk), kTuple);
      if (auto ec = std::get<0>(got)) {
        boost::system::error_code ignored;
        if (ec == asio::error::eof)
          to.shutdown(tcp::socket::shutdown_send, ignored);
        else
          c.close();
        co_return;
      }
      std::size_t n = std::get<1>(got);
      if (!charge(c, n, upward)) {
        c.close();
        co_return;
      }
      c.deadline = Clock::now() + config_->idle_timeout;
      auto wrote = co_await asio::async_write(to, asio::buffer(chunk.data(), n), kTuple);
      if (std::get<0>(wrote)) {
        c.close();
        co_return;
      }
    }
  }

  // The byte caps, before a connection is opened: why none may be, or "".
  std::string cap_reached() {
    sync_call();
    if (sandbox_bytes_ >= policy_->max_bytes_per_sandbox)
      return "this sandbox's egress byte cap (" + mib(policy_->max_bytes_per_sandbox) +
             ") is used up";
    if (call_bytes_ >= policy_->max_bytes_per_call)
      return "this call's egress byte cap (" + mib(policy_->max_bytes_per_call) +
             ") is used up; the next call may transfer again";
    return "";
  }

  // Counts `n` bytes against the caps and charges them; false (and why, in the connection's
  // outcome) when they may not pass.
  bool charge(Connection& c, std::size_t n, bool upward) {
    sync_call();
    // A chunk that would cross a cap is not relayed, and the cap counts as used up: the next
    // request is refused rather than given the few bytes left.
    if (sandbox_bytes_ + n > policy_->max_bytes_per_sandbox) {
      sandbox_bytes_ = policy_->max_bytes_per_sandbox;
      c.ended(ConnectionEnd::Kind::capped, "closed: the sandbox's egress byte cap");
      return false;
    }
    if (call_bytes_ + n > policy_->max_bytes_per_call) {
      call_bytes_ = policy_->max_bytes_per_call;
      c.ended(ConnectionEnd::Kind::capped, "closed: the call's egress byte cap");
      return false;
    }
    if (!account_->charge(n)) {
      c.ended(ConnectionEnd::Kind::capped, "closed: the sandbox ended or reached its spend cap");
      return false;
    }
    sandbox_bytes_ += n;
    call_bytes_ += n;
    (upward ? c.up : c.down) += n;
    return true;
  }

  void sync_call() {
    auto call = account_->call_number();
    if (call != call_number_) {
      call_number_ = call;
      call_bytes_ = 0;
    }
  }

  // An HTTP error with the reason as its status line's phrase (what pip and npm print) and body.
  asio::awaitable<void> refuse(Connection& c, int status, const std::string& reason) {
    c.ended(ConnectionEnd::Kind::refused, "refused: " + reason);
    std::string body = "sandgate egress: " + reason + "\n";
    std::string text = "HTTP/1.1 " + std::to_string(status) + " " + reason +
                       "\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: " +
                       std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" + body;
    c.deadline = Clock::now() + config_->step_timeout;
    co_await asio::async_write(c.client, asio::buffer(text), kTuple);
    boost::system::error_code ignored;
    c.client.shutdown(tcp::socket::shutdown_send, ignored);
    // What the client still sends is read (a little, briefly) before the close: closing with
    // unread bytes would reset the connection, and the client could lose the answer unread.
    c.deadline = Clock::now() + std::chrono::seconds(2);
    c.timer.cancel();  // the watchdog waits for the new, nearer deadline
    std::vector<char> drain(4096);
    for (int reads = 0; reads < 16; ++reads) {
      auto got = co_await c.client.async_read_some(asio::buffer(drain), kTuple);
      if (std::get<0>(got)) break;
    }
  }

  void log(const Connection& c) const {
    auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - c.started);
    log_event(LogLevel::info, "egress_connection",
              {{"tenant", labels_.tenant},
               {"session", labels_.session},
               {"sandbox", labels_.sandbox},
               {"method", c.kind},
               {"host", c.host},
               {"port", c.port},
               {"bytes_up", c.up},
               {"bytes_down", c.down},
               {"duration_ms", ms.count()},
               {"outcome", c.outcome}});
  }

  asio::strand<asio::any_io_executor> strand_;
  tcp::acceptor acceptor_;
  std::shared_ptr<const TenantEgress> policy_;
  std::shared_ptr<RelayAccount> account_;
  std::shared_ptr<const ProxyConfig> config_;
  std::shared_ptr<ConnectionShares> shares_;
  RelayLabels labels_;
  ConnectionObserver observer_;
  // On the strand only.
  bool stopped_ = false;
  std::uint32_t active_ = 0;   // relayed (or being decided) now
  std::uint32_t serving_ = 0;  // the same, and refusals being written
  std::uint32_t lookups_ = 0;  // far sides being opened now (kLookupsPerSandbox)
  std::vector<std::weak_ptr<Connection>> live_;
  std::uint64_t sandbox_bytes_ = 0;
  std::uint64_t call_bytes_ = 0;
  std::uint64_t call_number_ = 0;
};

const char* connection_end_name(ConnectionEnd::Kind kind) {
  switch (kind) {
    case ConnectionEnd::Kind::refused:
      return "refused";
    case ConnectionEnd::Kind::capped:
      return "capped";
    case ConnectionEnd::Kind::failed:
      return "failed";
    default:
      return "relayed";
  }
}

std::shared_ptr<Relay> Relay::start(asio::any_io_executor executor, UniqueFd listener,
                                    std::shared_ptr<const TenantEgress> policy,
                                    std::shared_ptr<RelayAccount> account,
                                    std::shared_ptr<const ProxyConfig> config,
                                    std::shared_ptr<ConnectionShares> shares, RelayLabels labels,
                                    ConnectionObserver observer) {
  auto relay = std::make_shared<RelayImpl>(std::move(executor), std::move(policy),
                                           std::move(account), std::move(config), std::move(shares),
                                           std::move(labels), std::move(observer));
  relay->begin(std::move(listener));
  return relay;
}

}  // namespace sandgate::egress
