// The egress proxy's gateway-wide options (issue #30). Which destinations a tenant may reach is
// the tokens file's (egress=); these set the proxy's route out and the caps a tenant's line does
// not set.
#include <stdexcept>

#include "egress/proxy_config.hpp"
#include "server/gateway/config_option.hpp"

namespace sandgate::server::options_detail {
namespace {

constexpr std::uint64_t MiB = 1ull << 20;

double to_price(const std::string& v) {
  // 0 is a price too: egress the operator does not charge for.
  std::size_t used = 0;
  double x = 0;
  try {
    x = std::stod(v, &used);
  } catch (const std::logic_error&) {
    used = 0;
  }
  if (used == 0 || used != v.size() || !(x >= 0) || x > 1e6)
    throw std::invalid_argument("expected a price in USD, 0 or more");
  return x;
}

}  // namespace

std::vector<Option> egress_options() {
  return {
      {"--egress-upstream-proxy", "SANDGATE_EGRESS_UPSTREAM_PROXY", "",
       "host:port of an HTTP proxy (e.g. a corporate one) that every egress connection goes "
       "through: CONNECT for tunnels, the absolute URL for plain HTTP. Tenants' allow-lists "
       "still decide what may be asked for; names are then resolved, and private addresses "
       "refused or not, by that proxy. Default: connect directly.",
       [](Config& c, const std::string& v) {
         if (v.empty()) {
           c.registry.egress_proxy.upstream.reset();
           return;
         }
         auto upstream = egress::parse_upstream_proxy(v);
         if (!upstream) throw std::invalid_argument("expected host:port");
         c.registry.egress_proxy.upstream = *upstream;
       }},
      {"--egress-price-gib", "SANDGATE_EGRESS_PRICE_GIB", "0.09",
       "USD per GiB a sandbox's egress proxy relays (both ways), added to its spend.",
       [](Config& c, const std::string& v) { c.host.prices.usd_per_egress_gib = to_price(v); }},
      {"--egress-connections", "SANDGATE_EGRESS_CONNECTIONS", "16",
       "Connections one sandbox may hold open through its egress proxy at once (a tenant's "
       "egress_connections= overrides); more are refused with a 429.",
       [](Config& c, const std::string& v) {
         c.tenants.egress_connections = static_cast<std::uint32_t>(to_u64(v, 1, 4096));
       }},
      {"--egress-max-connections", "SANDGATE_EGRESS_MAX_CONNECTIONS", "512",
       "Connections all sandboxes together may hold open through the egress proxies at once; "
       "one tenant at most half of them (all with a single token and no --oauth-issuer, or "
       "--no-auth). Beyond either, a connection gets a 429 saying which. Each may hold 128 KiB "
       "of the gateway's memory while it relays: keep this many times that inside "
       "--gateway-memory-reserve-mb.",
       [](Config& c, const std::string& v) {
         c.registry.egress_proxy.max_connections_total = to_u64(v, 1, 2048);
       }},
      {"--egress-mb-per-call", "SANDGATE_EGRESS_MB_PER_CALL", "1024",
       "MiB a sandbox's egress proxy relays (both ways) while one call runs (a tenant's "
       "egress_mb_per_call= overrides).",
       [](Config& c, const std::string& v) {
         c.tenants.egress_bytes_per_call = to_u64(v, 1, 1ull << 30) * MiB;
       }},
      {"--egress-mb-per-sandbox", "SANDGATE_EGRESS_MB_PER_SANDBOX", "4096",
       "MiB a sandbox's egress proxy relays (both ways) over the sandbox's life (a tenant's "
       "egress_mb_per_sandbox= overrides).",
       [](Config& c, const std::string& v) {
         c.tenants.egress_bytes_per_sandbox = to_u64(v, 1, 1ull << 30) * MiB;
       }},
  };
}

}  // namespace sandgate::server::options_detail
