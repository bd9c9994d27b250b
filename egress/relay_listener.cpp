// The egress relay's listener: accepts on the sandbox's listening socket, closes connections
// beyond the sandbox's cap unanswered, hands each other one to a RelayConnection
// (relay_connection.hpp), and stops them all (relay.hpp).
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <utility>
#include <vector>

#include "common/logging.hpp"
#include "egress/relay.hpp"
#include "egress/relay_connection.hpp"

namespace sandgate::egress {
namespace asio = boost::asio;
using tcp = asio::ip::tcp;

namespace {

constexpr auto kTuple = asio::as_tuple(asio::use_awaitable);

class RelayListener final : public Relay, public std::enable_shared_from_this<RelayListener> {
 public:
  explicit RelayListener(std::shared_ptr<RelayContext> relay)
      : relay_(std::move(relay)), acceptor_(relay_->strand) {}

  void begin(UniqueFd listener) {
    boost::system::error_code ec;
    acceptor_.assign(tcp::v4(), listener.get(), ec);
    if (!ec) listener.release();  // the acceptor's now; on failure `listener` closes it
    if (ec) {
      log_event(LogLevel::warn, "egress_listener_unusable",
                {{"sandbox", relay_->labels.sandbox}, {"error", ec.message()}});
      return;
    }
    asio::co_spawn(relay_->strand, accept_loop(shared_from_this()), asio::detached);
  }

  void stop() override {
    asio::post(relay_->strand, [self = shared_from_this()] { self->stop_now(); });
  }

 private:
  void stop_now() {
    stopped_ = true;
    boost::system::error_code ignored;
    acceptor_.close(ignored);
    for (auto& weak : live_)
      if (auto connection = weak.lock()) connection->abandon();
    live_.clear();
  }

  // `self` keeps the listener alive while it accepts.
  asio::awaitable<void> accept_loop([[maybe_unused]] std::shared_ptr<RelayListener> self) {
    while (!stopped_) {
      auto accepted = co_await acceptor_.async_accept(kTuple);
      if (stopped_) break;
      auto ec = std::get<0>(accepted);
      if (ec == asio::error::operation_aborted || !acceptor_.is_open()) break;
      if (ec) {
        // Out of descriptors or memory, a connection reset before it was taken: wait a little
        // rather than spin.
        asio::steady_timer pause(relay_->strand, std::chrono::milliseconds(100));
        co_await pause.async_wait(kTuple);
        continue;
      }
      // Beyond what this sandbox may have answered at once: closed unanswered, so that a flood
      // of connections cannot hold the gateway's descriptors waiting for their refusals to be
      // written. (The gateway-wide cap and the tenant's share of it are answered: serve.)
      if (relay_->serving >= 2 * relay_->policy->max_connections + 8) {
        boost::system::error_code ignored;
        std::get<1>(accepted).close(ignored);
        continue;
      }
      auto connection = std::make_shared<RelayConnection>(relay_, std::move(std::get<1>(accepted)));
      std::erase_if(live_, [](const auto& weak) { return weak.expired(); });
      live_.push_back(connection);
      connection->start();
    }
  }

  std::shared_ptr<RelayContext> relay_;
  tcp::acceptor acceptor_;
  // On the strand only.
  bool stopped_ = false;
  std::vector<std::weak_ptr<RelayConnection>> live_;
};

}  // namespace

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
                                    ConnectionObserver observer,
                                    std::shared_ptr<ConnectionLog> log) {
  auto relay = std::make_shared<RelayContext>(
      std::move(executor), std::move(policy), std::move(account), std::move(config),
      std::move(shares), std::move(labels), std::move(observer));
  relay->log = std::move(log);
  auto listener_of_relay = std::make_shared<RelayListener>(std::move(relay));
  listener_of_relay->begin(std::move(listener));
  return listener_of_relay;
}

}  // namespace sandgate::egress
