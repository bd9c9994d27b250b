#pragma once
// One client connection of a sandbox's egress relay (relay.hpp): its request head is read, the
// request refused or its destination (or the upstream proxy) opened, then a CONNECT tunnel or
// one plain request relayed, every byte counted against the caps, and one log line at its end.
// The listener (relay_listener.cpp) accepts the connections and stops them.
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/parser.hpp>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "egress/connection_shares.hpp"
#include "egress/header_secret.hpp"
#include "egress/proxy_config.hpp"
#include "egress/proxy_request.hpp"
#include "egress/relay.hpp"
#include "egress/relay_account.hpp"
#include "egress/relay_bytes.hpp"
#include "egress/tenant_egress.hpp"

namespace sandgate::egress {

// What all connections of one relay share: the tenant's policy, the relay's labels and
// observer, and the counts kept on its strand.
struct RelayContext {
  RelayContext(boost::asio::any_io_executor executor,
               std::shared_ptr<const TenantEgress> tenant_policy,
               std::shared_ptr<RelayAccount> relay_account,
               std::shared_ptr<const ProxyConfig> proxy_config,
               std::shared_ptr<ConnectionShares> tenant_shares, RelayLabels relay_labels,
               ConnectionObserver connection_observer);

  boost::asio::strand<boost::asio::any_io_executor> strand;  // all of the relay's work
  std::shared_ptr<const TenantEgress> policy;
  std::shared_ptr<const ProxyConfig> config;
  std::shared_ptr<ConnectionShares> shares;
  RelayLabels labels;
  ConnectionObserver observer;
  std::shared_ptr<RelayAccount> account;
  std::shared_ptr<ConnectionLog> log;  // may be null
  // On the strand only.
  std::uint32_t active = 0;   // relayed (or being decided) now
  std::uint32_t serving = 0;  // the same, and refusals being written
  std::uint32_t lookups = 0;  // far sides being opened now (kLookupsPerSandbox)
  RelayBytes bytes;
};

// One client connection and, once opened, its destination (or the upstream proxy).
class RelayConnection : public std::enable_shared_from_this<RelayConnection> {
 public:
  RelayConnection(std::shared_ptr<RelayContext> context, boost::asio::ip::tcp::socket client);

  // Serves the connection on the relay's strand; it keeps itself alive until it has ended.
  void start();
  // Closes it for good because its relay stopped: no step may start again. On the strand.
  void abandon();

 private:
  using Clock = std::chrono::steady_clock;
  using Parser = boost::beast::http::request_parser<boost::beast::http::empty_body>;
  struct Refusal {
    int status = 0;
    std::string reason;
  };

  // `self` keeps the connection alive while it is served (and watched).
  boost::asio::awaitable<void> serve(std::shared_ptr<RelayConnection> self);
  boost::asio::awaitable<void> watch(std::shared_ptr<RelayConnection> self);
  boost::asio::awaitable<void> relay();
  boost::asio::awaitable<bool> read_head(boost::beast::flat_buffer& buffer, Parser& parser);
  boost::asio::awaitable<std::optional<ProxyTarget>> admit(const Parser& parser, bool tunnel);
  std::optional<Refusal> refusal_of(const Parser& parser, const ProxyTarget& target, bool tunnel);
  boost::asio::awaitable<bool> open_far_side(const ProxyTarget& target);
  boost::asio::awaitable<void> relay_tunnel(const ProxyTarget& target,
                                            boost::beast::flat_buffer& buffer);
  boost::asio::awaitable<bool> open_tunnel(const ProxyTarget& target,
                                           boost::beast::flat_buffer& buffer);
  boost::asio::awaitable<void> relay_plain(const Parser& parser, const ProxyTarget& target,
                                           boost::beast::flat_buffer& buffer);
  boost::asio::awaitable<void> copy_exactly(std::uint64_t left);
  // A host carrying a secret (relay_terminated.cpp, issue #44): the sandbox's TLS terminated
  // with the gateway CA's certificate, the proxy's own verified TLS to the host, and each
  // request on the connection given the secret's header.
  using TlsStream = boost::asio::ssl::stream<boost::asio::ip::tcp::socket&>;
  boost::asio::awaitable<void> relay_terminated(const ProxyTarget& target,
                                                const HeaderSecret& secret,
                                                boost::beast::flat_buffer& buffer);
  boost::asio::awaitable<bool> open_host_tls(TlsStream& up, const ProxyTarget& target);
  boost::asio::awaitable<bool> accept_sandbox_tls(TlsStream& down, const ProxyTarget& target);
  boost::asio::awaitable<void> exchange(TlsStream& down, TlsStream& up, const ProxyTarget& target,
                                        const HeaderSecret& secret);
  boost::asio::awaitable<bool> relay_answer(TlsStream& down, TlsStream& up,
                                            boost::beast::flat_buffer& from_host, bool head);
  boost::asio::awaitable<bool> copy_counted(TlsStream& from, TlsStream& to,
                                            boost::beast::flat_buffer& pending, std::uint64_t left,
                                            bool upward);
  boost::asio::awaitable<void> refuse_in_tls(TlsStream& down, int status,
                                             const std::string& reason);
  boost::asio::awaitable<void> pump(bool upward);
  boost::asio::awaitable<void> refuse(int status, const std::string& reason);
  bool charge(std::size_t n, bool upward);
  void ended(ConnectionEnd::Kind how, std::string why);
  void close();
  void log() const;

  std::shared_ptr<RelayContext> relay_;
  boost::asio::ip::tcp::socket client_;
  boost::asio::ip::tcp::socket upstream_;
  boost::asio::steady_timer timer_;  // the watchdog's (watch)
  Clock::time_point deadline_{};     // closed when reached with nothing done
  bool done_ = false;
  bool timed_out_ = false;
  bool abandoned_ = false;  // timed out, or its relay stopped: no step may start again
  Clock::time_point started_ = Clock::now();
  std::chrono::system_clock::time_point started_wall_ = std::chrono::system_clock::now();
  std::string kind_ = "-";  // CONNECT or the plain request's method
  std::string host_ = "-";
  std::uint16_t port_ = 0;
  std::uint64_t up_ = 0, down_ = 0;  // client to destination, destination to client
  std::string outcome_ = "relayed";
  std::string secret_ = "-";  // the name of the secret applied, if any (never its value)
  std::uint64_t call_ = 0;    // the sandbox's call when the connection came
  std::shared_ptr<ConnectionLog::Entry> record_;  // in the relay's log, once its target is known
  ConnectionEnd::Kind end_ = ConnectionEnd::Kind::relayed;
};

}  // namespace sandgate::egress
