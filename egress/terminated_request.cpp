#include "egress/terminated_request.hpp"

#include <variant>

#include "egress/plain_request.hpp"

namespace sandgate::egress {
namespace http = boost::beast::http;

TerminatedRefusal terminated_request_refusal(const http::request<http::empty_body>& request,
                                             const ProxyTarget& tunnel) {
  const std::string_view target = request.target();
  if (request.method() == http::verb::connect || target.empty() || target.front() != '/')
    return {400, "a request inside a TLS connection must name a path (origin form)"};
  if (request.version() != 11) return {505, "only HTTP/1.1 is proxied"};
  if (request.count(http::field::host) != 1)
    return {400, "a request must have exactly one Host header"};
  // The Host, as a CONNECT line would name it: with the tunnel's port when it gives none.
  std::string host(request[http::field::host]);
  bool has_port = host.starts_with('[') ? host.find("]:") != std::string::npos
                                        : host.find(':') != std::string::npos;
  auto parsed =
      parse_proxy_target(true, has_port ? host : host + ":" + std::to_string(tunnel.port));
  auto* named = std::get_if<ProxyTarget>(&parsed);
  if (named == nullptr || named->host != tunnel.host || named->port != tunnel.port)
    return {421, "a request for another host than " + tunnel.authority +
                     " inside its TLS connection is refused"};
  if (std::string why = plain_request_refusal(request); !why.empty()) return {400, why};
  return {};
}

ProxyTarget terminated_request_target(const http::request<http::empty_body>& request,
                                      const ProxyTarget& tunnel) {
  ProxyTarget out = tunnel;
  out.tunnel = false;
  out.origin_form = std::string(request.target());
  out.authority = std::string(request[http::field::host]);
  return out;
}

}  // namespace sandgate::egress
