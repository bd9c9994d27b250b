#include "replica_forwarder.hpp"

#include <atomic>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <chrono>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <variant>

#include "common/host_port.hpp"
#include "common/logging.hpp"
#include "jsonrpc.hpp"
#include "server/http/http_config.hpp"
#include "server/http/responses.hpp"
#include "session/session_id.hpp"

namespace sandgate::server {
namespace asio = boost::asio;
namespace beast = boost::beast;
using tcp = asio::ip::tcp;
constexpr auto kTuple = asio::as_tuple(asio::use_awaitable);

namespace {

constexpr auto kConnectTimeout = std::chrono::seconds(3);
constexpr std::size_t kMaxWholeBody = 64u << 20;
// A restarting replica is back within seconds (the restart tests measure ~0.1-0.4 s from start
// to ready, plus the pod's own start).
constexpr auto kRetryAfterUnreachable = std::chrono::seconds(3);

struct Upstream {
  explicit Upstream(asio::any_io_executor ex) : stream(ex) {}
  beast::tcp_stream stream;
  beast::flat_buffer buffer;
  http::response_parser<http::buffer_body> parser;
  char piece[16 * 1024];

  // Reads the next piece of the body; "" with done() at the end, nullopt on error.
  asio::awaitable<std::optional<std::string>> next() {
    parser.get().body().data = piece;
    parser.get().body().size = sizeof piece;
    auto [ec, n] = co_await http::async_read(stream, buffer, parser, kTuple);
    if (ec == http::error::need_buffer) ec = {};
    if (ec) co_return std::nullopt;
    co_return std::string(piece, sizeof piece - parser.get().body().size);
  }
};

}  // namespace

Reply ReplicaForwarder::unreachable(const Request& req) const {
  if (!owners_keep_sessions_)
    return {json_response(http::status::not_found,
                          jsonrpc::error(nullptr, jsonrpc::server_error,
                                         "Session not found: the replica holding it is "
                                         "unreachable; initialize a new session"),
                          req.version()),
            nullptr};
  auto response = json_response(
      http::status::service_unavailable,
      jsonrpc::error(nullptr, jsonrpc::server_error,
                     "The replica holding this session is unreachable (restarting, most likely: "
                     "it keeps its sessions); retry in a few seconds. If it stays unreachable, "
                     "initialize a new session"),
      req.version());
  response.set(http::field::retry_after, std::to_string(kRetryAfterUnreachable.count()));
  return {std::move(response), nullptr};
}

namespace {

bool hop_by_hop(std::string_view name) {
  return beast::iequals(name, "connection") || beast::iequals(name, "keep-alive") ||
         beast::iequals(name, "transfer-encoding") || beast::iequals(name, "content-length");
}

}  // namespace

ReplicaForwarder::ReplicaForwarder(const McpEndpointConfig& config)
    : self_(config.replica_name),
      secret_(config.peers.secret),
      owners_keep_sessions_(config.owners_keep_sessions),
      peers_(config.peers.by_name.begin(), config.peers.by_name.end()),
      url_template_(config.peers.url_template),
      response_wait_(config.forward_wait) {}

std::optional<std::string> ReplicaForwarder::peer_for(std::string_view id) const {
  if (self_.empty() || !(session::looks_like_session_id(id) || session::looks_like_handle(id) ||
                         session::looks_like_task_id(id)))
    return std::nullopt;
  std::string_view owner = session::owner_replica(id);
  if (owner.empty() || owner == self_) return std::nullopt;
  if (auto it = peers_.find(owner); it != peers_.end()) return it->second;
  if (url_template_.empty()) return std::nullopt;
  // The owner's name is a DNS label that is not a number (the shape checks saw to it),
  // and the template's host ends in a fixed DNS suffix (checked at start): the name picks a
  // host under that suffix, never an address or another domain.
  std::string url = url_template_;
  url.replace(url.find("{replica}"), 9, owner);
  return url;
}

namespace {

constexpr auto kResolveWarningGap = std::chrono::seconds(10);

// Whether a failed resolution may be logged as a warning now (at most one per gap, gateway-wide).
bool resolve_warning_due() {
  static std::atomic<std::int64_t> last_ms{std::numeric_limits<std::int64_t>::min() / 2};
  const std::int64_t now = std::chrono::duration_cast<std::chrono::milliseconds>(
                               std::chrono::steady_clock::now().time_since_epoch())
                               .count();
  std::int64_t last = last_ms.load();
  return now - last >= std::chrono::milliseconds(kResolveWarningGap).count() &&
         last_ms.compare_exchange_strong(last, now);
}

// The peer at host[:port], connected; nothing when it cannot be resolved or reached.
asio::awaitable<std::shared_ptr<Upstream>> connect_to(const std::string& authority) {
  auto split = split_host_port(authority);
  auto* parts = std::get_if<HostPort>(&split);
  if (!parts) {
    // --peers is checked at start and the template's host is a DNS name: a deployment fault.
    log_event(resolve_warning_due() ? LogLevel::warn : LogLevel::debug, "forward_failed",
              {{"peer", authority}, {"error", "not host[:port]"}});
    co_return nullptr;
  }
  std::string host(parts->host);
  std::string port = parts->port ? std::to_string(*parts->port) : "80";
  auto executor = co_await asio::this_coro::executor;
  auto up = std::make_shared<Upstream>(executor);
  tcp::resolver resolver(executor);
  auto [resolve_ec, endpoints] = co_await resolver.async_resolve(host, port, kTuple);
  if (resolve_ec) {
    // A peer name that does not resolve is a deployment fault an operator must see (a headless
    // Service missing, a typo in the template), as much as one that refuses the connection.
    // The names come from the ids clients send, so a client could make one a request: one
    // warning per kResolveWarningGap, the others at debug level.
    log_event(resolve_warning_due() ? LogLevel::warn : LogLevel::debug, "forward_failed",
              {{"peer", authority}, {"error", resolve_ec.message()}});
    co_return nullptr;
  }
  up->stream.expires_after(kConnectTimeout);
  auto [connect_ec, ep] = co_await up->stream.async_connect(endpoints, kTuple);
  if (connect_ec) {
    log_event(LogLevel::warn, "forward_failed",
              {{"peer", authority}, {"error", connect_ec.message()}});
    co_return nullptr;
  }
  co_return up;
}

// The answer relayed: read whole (JSON, 202, 404…), or as an event stream piece by piece.
asio::awaitable<std::optional<Reply>> relay_answer(std::shared_ptr<Upstream> up,
                                                   const Request& req) {
  const auto& head = up->parser.get();
  Response response{head.result(), req.version()};
  for (const auto& field : head)
    if (!hop_by_hop(field.name_string())) response.set(field.name_string(), field.value());
  if (!head.chunked()) {
    std::string body;
    while (!up->parser.is_done()) {
      auto piece = co_await up->next();
      if (!piece) co_return std::nullopt;
      body += *piece;
    }
    response.body() = std::move(body);
    response.prepare_payload();
    co_return Reply{std::move(response), nullptr};
  }
  auto relay = [up](EventSink& sink) -> asio::awaitable<void> {
    while (!up->parser.is_done()) {
      up->stream.expires_never();
      auto piece = co_await up->next();
      if (!piece) co_return;
      if (!piece->empty() && !co_await sink.raw(*piece)) co_return;
    }
  };
  co_return Reply{std::move(response), std::move(relay)};
}

// The request, marked as forwarded by this replica, then the answer's head. The owner answers
// when the call is done (or starts its event stream): the read waits that long.
asio::awaitable<bool> send_and_read_head(Upstream& up, const Request& req,
                                         const std::string& authority, const std::string& self,
                                         const std::string& peer_secret,
                                         std::chrono::seconds response_wait) {
  Request copy = req;
  copy.set(kForwardedHeader, self);
  // The owner counts this connection as a replica's, not as one client's (never a client's
  // own guess of the secret relayed).
  copy.erase(kPeerSecretHeader);
  if (!peer_secret.empty()) copy.set(kPeerSecretHeader, peer_secret);
  copy.set(http::field::host, authority);
  copy.keep_alive(false);
  copy.prepare_payload();
  up.stream.expires_after(std::chrono::seconds(30));
  auto [write_ec, written] = co_await http::async_write(up.stream, copy, kTuple);
  if (write_ec) co_return false;
  up.stream.expires_after(response_wait);
  auto [header_ec, header_n] =
      co_await http::async_read_header(up.stream, up.buffer, up.parser, kTuple);
  if (header_ec) co_return false;
  up.parser.body_limit(kMaxWholeBody);
  co_return true;
}

}  // namespace

asio::awaitable<std::optional<Reply>> ReplicaForwarder::forward(
    const Request& req, const std::string& peer_url, std::shared_ptr<CancelSignal> cancel) {
  std::string authority = peer_url.substr(7);  // after "http://"
  authority = authority.substr(0, authority.find('/'));
  auto up = co_await connect_to(authority);
  if (!up) co_return std::nullopt;
  if (cancel) {
    auto executor = up->stream.get_executor();
    cancel->on_cancel([up, executor] {
      asio::post(executor, [up] {
        boost::system::error_code ignored;
        up->stream.socket().close(ignored);
      });
    });
  }
  if (!co_await send_and_read_head(*up, req, authority, self_, secret_, response_wait_))
    co_return std::nullopt;
  co_return co_await relay_answer(up, req);
}

}  // namespace sandgate::server
