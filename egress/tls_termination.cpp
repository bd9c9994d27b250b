#include "egress/tls_termination.hpp"

#include <openssl/ssl.h>

#include <algorithm>
#include <stdexcept>

namespace sandgate::egress {
namespace asio = boost::asio;

namespace {

// ALPN: HTTP/1.1 only. A client offering h2 alone gets no protocol (and speaks HTTP/1.1 or
// fails); one offering both gets http/1.1.
int select_http11(SSL*, const unsigned char** out, unsigned char* outlen, const unsigned char* in,
                  unsigned int inlen, void*) {
  static const unsigned char kHttp11[] = {'h', 't', 't', 'p', '/', '1', '.', '1'};
  for (unsigned int i = 0; i < inlen;) {
    unsigned int len = in[i];
    if (i + 1 + len > inlen) break;
    if (len == sizeof kHttp11 && std::equal(in + i + 1, in + i + 1 + len, kHttp11)) {
      *out = in + i + 1;
      *outlen = static_cast<unsigned char>(len);
      return SSL_TLSEXT_ERR_OK;
    }
    i += 1 + len;
  }
  return SSL_TLSEXT_ERR_NOACK;
}

}  // namespace

TlsTermination::TlsTermination(GatewayCa ca, const std::string& upstream_ca_file)
    : ca_(std::move(ca)), upstream_(asio::ssl::context::tls_client) {
  upstream_.set_options(asio::ssl::context::default_workarounds | asio::ssl::context::no_sslv2 |
                        asio::ssl::context::no_sslv3 | asio::ssl::context::no_tlsv1 |
                        asio::ssl::context::no_tlsv1_1);
  upstream_.set_verify_mode(asio::ssl::verify_peer);
  boost::system::error_code ec;
  if (upstream_ca_file.empty())
    upstream_.set_default_verify_paths(ec);
  else
    upstream_.load_verify_file(upstream_ca_file, ec);
  if (ec)
    throw std::runtime_error(
        "cannot load the egress trust " +
        (upstream_ca_file.empty() ? std::string("(the system's store)") : upstream_ca_file) + ": " +
        ec.message());
  static const unsigned char kAlpn[] = {8, 'h', 't', 't', 'p', '/', '1', '.', '1'};
  SSL_CTX_set_alpn_protos(upstream_.native_handle(), kAlpn, sizeof kAlpn);
}

std::shared_ptr<asio::ssl::context> TlsTermination::server_context(const std::string& tenant,
                                                                   const std::string& host) {
  {
    std::lock_guard lock(mutex_);
    for (const auto& leaf : leaves_)
      if (leaf.tenant == tenant && leaf.host == host) return leaf.context;
  }
  // Issued outside the lock: signing takes a little while, and other relays need the cache.
  LeafCertificate leaf = ca_.issue(host);
  auto context = std::make_shared<asio::ssl::context>(asio::ssl::context::tls_server);
  context->set_options(asio::ssl::context::default_workarounds | asio::ssl::context::no_sslv2 |
                       asio::ssl::context::no_sslv3 | asio::ssl::context::no_tlsv1 |
                       asio::ssl::context::no_tlsv1_1);
  SSL_CTX* ctx = context->native_handle();
  if (SSL_CTX_use_certificate(ctx, leaf.certificate.get()) != 1 ||
      SSL_CTX_use_PrivateKey(ctx, leaf.key.get()) != 1)
    throw std::runtime_error("cannot use an issued certificate");
  SSL_CTX_set_alpn_select_cb(ctx, select_http11, nullptr);
  std::lock_guard lock(mutex_);
  for (const auto& cached : leaves_)
    if (cached.tenant == tenant && cached.host == host) return cached.context;
  std::size_t of_tenant = static_cast<std::size_t>(std::count_if(
      leaves_.begin(), leaves_.end(), [&](const Leaf& l) { return l.tenant == tenant; }));
  if (of_tenant >= kLeavesPerTenant)
    leaves_.erase(std::find_if(leaves_.begin(), leaves_.end(),
                               [&](const Leaf& l) { return l.tenant == tenant; }));
  else if (leaves_.size() >= kLeavesInAll)
    leaves_.pop_front();
  leaves_.push_back({tenant, host, context});
  return context;
}

std::size_t TlsTermination::cached_leaves() const {
  std::lock_guard lock(mutex_);
  return leaves_.size();
}

std::string TlsTermination::take_handshake(const std::string& tenant) {
  std::lock_guard lock(mutex_);
  if (handshakes_in_all_ >= kHandshakesInAll)
    return "the gateway already has " + std::to_string(kHandshakesInAll) +
           " TLS handshakes of egress connections in flight";
  std::size_t& mine = handshakes_[tenant];
  if (mine >= kHandshakesPerTenant)
    return "this tenant already has " + std::to_string(kHandshakesPerTenant) +
           " TLS handshakes of egress connections in flight";
  ++mine;
  ++handshakes_in_all_;
  return "";
}

void TlsTermination::give_back_handshake(const std::string& tenant) {
  std::lock_guard lock(mutex_);
  auto it = handshakes_.find(tenant);
  if (it == handshakes_.end()) return;
  if (--it->second == 0) handshakes_.erase(it);
  --handshakes_in_all_;
}

}  // namespace sandgate::egress
