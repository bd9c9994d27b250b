// The tool channel's listener and connections (tool_channel.hpp): accepts on the sandbox's unix
// socket, reads one HTTP/1.1 request at a time per connection (bounded head, body and idle
// time), answers it (channel_requests.cpp) while watching for the program to go away — which
// cancels its call — and stops everything with the sandbox.
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <list>

#include "common/logging.hpp"
#include "upstream/channel_context.hpp"

namespace sandgate::upstream {
namespace asio = boost::asio;
namespace http = boost::beast::http;
using namespace asio::experimental::awaitable_operators;
using Socket = asio::local::stream_protocol::socket;

namespace {

constexpr auto kTuple = asio::as_tuple(asio::use_awaitable);
// A program's request: its head, its body (a call's arguments), and how long a connection may
// sit idle between requests.
constexpr std::size_t kHeadLimit = 16 * 1024;
constexpr std::uint64_t kBodyLimit = 1 << 20;
constexpr auto kIdleLimit = std::chrono::seconds(60);

// Ends when the program closed its end (or the socket failed); a request sent before the answer
// (pipelining) is left for the next read, and then this waits until cancelled.
asio::awaitable<void> program_left(Socket& socket) {
  auto [ec] = co_await socket.async_wait(Socket::wait_read, kTuple);
  if (ec || socket.available() == 0) co_return;
  asio::steady_timer never(socket.get_executor(), asio::steady_timer::time_point::max());
  co_await never.async_wait(kTuple);
}

class Connection : public std::enable_shared_from_this<Connection> {
 public:
  Connection(std::shared_ptr<ChannelContext> channel, Socket socket)
      : channel_(std::move(channel)), socket_(std::move(socket)) {}

  void start() { asio::co_spawn(channel_->strand, serve(shared_from_this()), asio::detached); }
  void close() {
    boost::system::error_code ignored;
    socket_.close(ignored);
  }

 private:
  asio::awaitable<void> serve([[maybe_unused]] std::shared_ptr<Connection> self) {
    boost::beast::flat_buffer buffer;
    while (!channel_->stopped && socket_.is_open()) {
      http::request_parser<http::string_body> parser;
      parser.header_limit(kHeadLimit);
      parser.body_limit(kBodyLimit);
      asio::steady_timer idle(channel_->strand, kIdleLimit);
      auto read =
          co_await (http::async_read(socket_, buffer, parser, kTuple) || idle.async_wait(kTuple));
      if (read.index() != 0) break;  // idle too long
      auto [ec, n] = std::get<0>(read);
      (void)n;
      if (ec == http::error::body_limit) {
        co_await send(error_answer(413, "too_large", "a call's arguments are at most 1 MiB"),
                      false);
        break;
      }
      if (ec) break;
      auto request = parser.release();
      bool keep_alive = request.keep_alive();
      auto answered =
          co_await (answer_request(channel_, std::string(request.method_string()),
                                   std::string(request.target()), std::move(request.body())) ||
                    program_left(socket_));
      if (answered.index() != 0) break;  // the program went away: its call was cancelled
      if (!co_await send(std::move(std::get<0>(answered)), keep_alive) || !keep_alive) break;
    }
    close();
  }

  asio::awaitable<bool> send(ChannelAnswer answer, bool keep_alive) {
    http::response<http::string_body> response{static_cast<http::status>(answer.status), 11};
    response.set(http::field::content_type, answer.content_type);
    response.keep_alive(keep_alive);
    response.body() = std::move(answer.body);
    response.prepare_payload();
    auto [ec, n] = co_await http::async_write(socket_, response, kTuple);
    (void)n;
    co_return !ec;
  }

  std::shared_ptr<ChannelContext> channel_;
  Socket socket_;
};

class Listener final : public ToolChannel, public std::enable_shared_from_this<Listener> {
 public:
  explicit Listener(std::shared_ptr<ChannelContext> channel)
      : channel_(std::move(channel)), acceptor_(channel_->strand) {}

  void begin(UniqueFd listener) {
    boost::system::error_code ec;
    acceptor_.assign(asio::local::stream_protocol(), listener.get(), ec);
    if (ec) {
      log_event(LogLevel::warn, "tool_channel_unusable",
                {{"sandbox", channel_->labels.sandbox}, {"error", ec.message()}});
      return;
    }
    listener.release();  // the acceptor's now
    asio::co_spawn(channel_->strand, accept_loop(shared_from_this()), asio::detached);
  }

  void stop() override {
    asio::post(channel_->strand, [self = shared_from_this()] { self->stop_now(); });
  }

 private:
  void stop_now() {
    channel_->stopped = true;
    boost::system::error_code ignored;
    acceptor_.close(ignored);
    for (auto& weak : live_)
      if (auto connection = weak.lock()) connection->close();
    live_.clear();
    for (auto& [name, held] : channel_->clients)
      if (held.client) held.client->close();
    channel_->clients.clear();
  }

  asio::awaitable<void> accept_loop([[maybe_unused]] std::shared_ptr<Listener> self) {
    while (!channel_->stopped) {
      auto [ec, socket] = co_await acceptor_.async_accept(kTuple);
      if (channel_->stopped || ec == asio::error::operation_aborted || !acceptor_.is_open()) break;
      if (ec) {
        asio::steady_timer pause(channel_->strand, std::chrono::milliseconds(100));
        co_await pause.async_wait(kTuple);
        continue;
      }
      live_.remove_if([](const auto& weak) { return weak.expired(); });
      // At the sandbox's open connections, a moment for those whose programs already closed
      // them to notice (their ends are read on this strand, while this waits); beyond it, the
      // new one is closed unanswered (descriptors are the gateway's).
      for (int i = 0; i < 50 && live_.size() >= channel_->limits.connections; ++i) {
        asio::steady_timer pause(channel_->strand, std::chrono::milliseconds(10));
        co_await pause.async_wait(kTuple);
        live_.remove_if([](const auto& weak) { return weak.expired(); });
      }
      if (live_.size() >= channel_->limits.connections) {
        boost::system::error_code ignored;
        socket.close(ignored);
        continue;
      }
      auto connection = std::make_shared<Connection>(channel_, std::move(socket));
      live_.push_back(connection);
      connection->start();
    }
  }

  std::shared_ptr<ChannelContext> channel_;
  asio::local::stream_protocol::acceptor acceptor_;
  std::list<std::weak_ptr<Connection>> live_;  // on the strand
};

}  // namespace

std::shared_ptr<ToolChannel> ToolChannel::start(asio::any_io_executor executor, UniqueFd listener,
                                                const ChannelGrant& grant,
                                                std::shared_ptr<ToolAccount> account,
                                                ChannelLabels labels) {
  auto channel = std::make_shared<ChannelContext>(std::move(executor), grant.upstreams,
                                                  grant.allowed, std::move(account), grant.limits,
                                                  std::move(labels), grant.observer);
  auto listening = std::make_shared<Listener>(std::move(channel));
  listening->begin(std::move(listener));
  return listening;
}

}  // namespace sandgate::upstream
