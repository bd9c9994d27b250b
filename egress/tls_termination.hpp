#pragma once
// What the egress proxy needs to terminate a sandbox's TLS to a host carrying a secret (issue
// #44), shared by every relay of the gateway: the gateway CA, the certificates it issued (a
// server TLS context per tenant and host, cached, bounded), the client TLS context the proxy
// opens the real host with (verified against the system's store or --egress-ca-file), and the
// handshakes in flight (bounded for the gateway and per tenant). Thread-safe.
#include <boost/asio/ssl/context.hpp>
#include <cstddef>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "egress/gateway_ca.hpp"

namespace sandgate::egress {

class TlsTermination {
 public:
  // Throws std::runtime_error when `upstream_ca_file` cannot be used.
  TlsTermination(GatewayCa ca, const std::string& upstream_ca_file);

  const GatewayCa& ca() const { return ca_; }
  // The server context that shows a sandbox of `tenant` a certificate for `host` (HTTP/1.1 only
  // in ALPN). Issued on first use, then cached: at most kLeavesPerTenant per tenant and
  // kLeavesInAll in all, the oldest dropped first. Throws when it cannot be issued.
  std::shared_ptr<boost::asio::ssl::context> server_context(const std::string& tenant,
                                                            const std::string& host);
  // The client context for the real host (peer verification on; the caller sets the name).
  boost::asio::ssl::context& upstream_context() { return upstream_; }

  // Takes a place for one more handshake of `tenant`: "" when taken (give it back), otherwise
  // why not, worded for a 429.
  std::string take_handshake(const std::string& tenant);
  void give_back_handshake(const std::string& tenant);

  std::size_t cached_leaves() const;

  static constexpr std::size_t kLeavesPerTenant = 32;
  static constexpr std::size_t kLeavesInAll = 1024;
  static constexpr std::size_t kHandshakesPerTenant = 16;
  static constexpr std::size_t kHandshakesInAll = 64;

 private:
  struct Leaf {
    std::string tenant, host;
    std::shared_ptr<boost::asio::ssl::context> context;
  };

  GatewayCa ca_;
  boost::asio::ssl::context upstream_;
  mutable std::mutex mutex_;
  std::list<Leaf> leaves_;  // oldest first
  std::map<std::string, std::size_t> handshakes_;
  std::size_t handshakes_in_all_ = 0;
};

// A handshake place taken from TlsTermination, given back when this goes.
class HandshakePlace {
 public:
  HandshakePlace(TlsTermination& termination, std::string tenant)
      : termination_(&termination), tenant_(std::move(tenant)) {}
  HandshakePlace(const HandshakePlace&) = delete;
  HandshakePlace& operator=(const HandshakePlace&) = delete;
  ~HandshakePlace() { release(); }
  void release() {
    if (termination_ != nullptr) std::exchange(termination_, nullptr)->give_back_handshake(tenant_);
  }

 private:
  TlsTermination* termination_;
  std::string tenant_;
};

}  // namespace sandgate::egress
