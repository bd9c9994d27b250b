#include "server/gateway/secrets_ca.hpp"

#include <stdexcept>

#include "common/logging.hpp"

namespace sandgate::server {

std::shared_ptr<egress::TlsTermination> open_tls_termination(const Config& config) {
  if (config.secrets_file.empty()) return nullptr;
  const auto& proxy = config.registry.egress_proxy;
  if (proxy.ca_cert_file.empty() != proxy.ca_key_file.empty())
    throw std::runtime_error("--secrets-ca-cert and --secrets-ca-key go together");
  std::string where;
  auto ca = [&] {
    if (!proxy.ca_cert_file.empty()) {
      where = proxy.ca_cert_file;
      return egress::GatewayCa::load(proxy.ca_cert_file, proxy.ca_key_file);
    }
    if (!config.state.dir.empty()) {
      where = config.state.dir + "/egress-ca.pem";
      return egress::GatewayCa::load_or_make(config.state.dir);
    }
    where = "(in memory: no --state-dir)";
    return egress::GatewayCa::make();
  }();
  auto termination =
      std::make_shared<egress::TlsTermination>(std::move(ca), proxy.upstream_ca_file);
  log_event(LogLevel::info, "egress_ca_ready", {{"certificate", where}});
  return termination;
}

}  // namespace sandgate::server
