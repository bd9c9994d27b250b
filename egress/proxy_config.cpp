#include "egress/proxy_config.hpp"

#include <variant>

#include "egress/proxy_request.hpp"

namespace sandgate::egress {

std::optional<UpstreamProxy> parse_upstream_proxy(const std::string& text) {
  // The same authority syntax a CONNECT line has; a URL's path, if any, must be "/" alone.
  std::string authority = text;
  if (authority.rfind("http://", 0) == 0) authority = authority.substr(7);
  if (!authority.empty() && authority.back() == '/') authority.pop_back();
  auto parsed = parse_proxy_target(/*connect=*/true, authority);
  auto* target = std::get_if<ProxyTarget>(&parsed);
  if (target == nullptr) return std::nullopt;
  return UpstreamProxy{target->host, target->port};
}

}  // namespace sandgate::egress
