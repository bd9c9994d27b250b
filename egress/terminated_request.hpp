#pragma once
// A request the sandbox sends inside a TLS connection the egress proxy terminated for a host
// carrying a secret (issue #44): it must be for that host, in origin form, framed by
// Content-Length alone (plain_request.hpp's rules); its head to the host is plain_request_head's
// with the secret's header and the connection kept alive.
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/message.hpp>
#include <string>

#include "egress/proxy_request.hpp"

namespace sandgate::egress {

// Why this request may not go to `tunnel`'s host (a reason phrase for `status`), or "" when it
// may. Its Host header must name the host the CONNECT named (its port, when it gives one, too).
struct TerminatedRefusal {
  int status = 0;
  std::string reason;
};
TerminatedRefusal terminated_request_refusal(
    const boost::beast::http::request<boost::beast::http::empty_body>& request,
    const ProxyTarget& tunnel);

// `tunnel` as the request's head writes it: its path, and its Host as the sandbox wrote it
// (terminated_request_refusal has checked it).
ProxyTarget terminated_request_target(
    const boost::beast::http::request<boost::beast::http::empty_body>& request,
    const ProxyTarget& tunnel);

}  // namespace sandgate::egress
