#pragma once
// One sandbox's egress proxy: accepts on the listening socket its supervisor made in the
// sandbox's network namespace (127.0.0.1:3128 there) and relays what the tenant's allow-list
// allows. Every connection is one request: `CONNECT host:port` (then the tunnel's ClientHello
// must name the same host) or one plain-HTTP request by absolute URL. A refusal is an HTTP
// error with the reason in its status line and body, never a hang.
//
// All of a relay's work runs on one strand of the given executor; stop() may be called from any
// thread (the sandbox's end, under its lock: it only posts).
#include <boost/asio/any_io_executor.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "common/unique_fd.hpp"
#include "egress/connection_log.hpp"
#include "egress/connection_shares.hpp"
#include "egress/proxy_config.hpp"
#include "egress/relay_account.hpp"
#include "egress/tenant_egress.hpp"

namespace sandgate::egress {

// Who the connections are for, in the log (metadata only).
struct RelayLabels {
  std::string tenant;
  std::string session;  // a prefix of the session's id
  std::string sandbox;
};

// How one connection ended, for the gateway's metrics.
struct ConnectionEnd {
  enum class Kind {
    relayed,  // relayed until either side closed (or idle, or the sandbox ended)
    refused,  // an HTTP error (not allowed, malformed, over the connections cap) or its TLS was
    capped,   // closed at a byte cap or the sandbox's spend cap
    failed,   // no request, the far side unreachable or gone, no ClientHello in time
  };
  Kind kind = Kind::relayed;
  std::uint64_t bytes_up = 0;    // client to destination
  std::uint64_t bytes_down = 0;  // destination to client
  // What the `egress_connection` log line says of it (metadata only), for the operator's
  // record of each tenant's connections (connection_history.hpp).
  const RelayLabels* labels = nullptr;
  std::string method;  // CONNECT or the plain request's; "-" when none was read
  std::string host;    // "-" when the request named none
  std::uint16_t port = 0;
  std::string reason;  // why it was refused or ended, when not simply relayed
  std::string secret;  // the name of the secret applied, if any (never its value)
  std::chrono::system_clock::time_point started{};
  std::chrono::milliseconds duration{0};
};
const char* connection_end_name(ConnectionEnd::Kind kind);
// Told of every connection's end, on the relay's strand: it must be quick and thread-safe
// (`labels` lives as long as the call).
using ConnectionObserver = std::function<void(const ConnectionEnd&)>;

class Relay {
 public:
  // Starts accepting on `listener` (a listening TCP socket; the relay owns it from now on).
  // `shares` are the whole gateway's: each connection relayed holds a place of its tenant's.
  // `log` (may be null) gets a record of each connection, by the call that opened it.
  static std::shared_ptr<Relay> start(boost::asio::any_io_executor executor, UniqueFd listener,
                                      std::shared_ptr<const TenantEgress> policy,
                                      std::shared_ptr<RelayAccount> account,
                                      std::shared_ptr<const ProxyConfig> config,
                                      std::shared_ptr<ConnectionShares> shares, RelayLabels labels,
                                      ConnectionObserver observer = {},
                                      std::shared_ptr<ConnectionLog> log = nullptr);
  virtual ~Relay() = default;
  // Closes the listener and every connection. Idempotent, any thread.
  virtual void stop() = 0;
};

}  // namespace sandgate::egress
