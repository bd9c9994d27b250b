#pragma once
// A plain-HTTP proxy request as the destination gets it: origin form (or, for an upstream
// proxy, absolute form), the hop-by-hop headers dropped, Host written from the URL, and
// `Connection: close` — one request per connection.
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/message.hpp>
#include <string>

#include "egress/proxy_request.hpp"

namespace sandgate::egress {

std::string plain_request_head(
    const boost::beast::http::request<boost::beast::http::empty_body>& request,
    const ProxyTarget& target, bool to_upstream_proxy);

}  // namespace sandgate::egress
