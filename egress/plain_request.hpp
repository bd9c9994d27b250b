#pragma once
// A plain-HTTP proxy request as the destination gets it: origin form (or, for an upstream
// proxy, absolute form), the hop-by-hop headers dropped, Host written from the URL, and
// `Connection: close` — one request per connection.
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/message.hpp>
#include <string>

#include "egress/header_secret.hpp"
#include "egress/proxy_request.hpp"

namespace sandgate::egress {

// Why this plain request cannot be relayed as exactly one request, or "" when it can. Its body
// is framed by Content-Length alone, so any Transfer-Encoding is refused (a far side reading
// "gzip, chunked" or a lone "chunked" could find a second request in the body); and so is a
// Connection header naming a header that frames or routes the request (Content-Length, Host,
// Transfer-Encoding, Proxy-*): it would be dropped as hop-by-hop while the proxy still relays
// that many body bytes, and the far side would read the body as a request of its own.
std::string plain_request_refusal(
    const boost::beast::http::request<boost::beast::http::empty_body>& request);

// The head the far side gets. With `secret` (issue #44), every header of the secret's name the
// sandbox sent is dropped and the secret's header written instead. `keep_alive`: the connection
// stays open for the next request (a terminated TLS connection's; its Expect header is dropped,
// the relay says 100 Continue itself), else `Connection: close`.
std::string plain_request_head(
    const boost::beast::http::request<boost::beast::http::empty_body>& request,
    const ProxyTarget& target, bool to_upstream_proxy, const HeaderSecret* secret = nullptr,
    bool keep_alive = false);

}  // namespace sandgate::egress
