// A request inside a TLS connection the egress proxy terminated (egress/terminated_request):
// only for the host the CONNECT named, in origin form, framed by Content-Length.
#include "egress/terminated_request.hpp"

#include <boost/beast/http/parser.hpp>
#include <catch2/catch.hpp>
#include <string>

namespace {

boost::beast::http::request<boost::beast::http::empty_body> head_of(const std::string& text) {
  boost::beast::http::request_parser<boost::beast::http::empty_body> parser;
  boost::beast::error_code ec;
  parser.put(boost::asio::buffer(text), ec);
  INFO(text);
  REQUIRE_FALSE(ec);
  return parser.release();
}

int status_of(const std::string& text, const sandgate::egress::ProxyTarget& tunnel) {
  return sandgate::egress::terminated_request_refusal(head_of(text), tunnel).status;
}

}  // namespace

TEST_CASE("a terminated connection carries requests for its own host only",
          "[unit][egress][secrets]") {
  sandgate::egress::ProxyTarget tunnel{true, "api.example", 443, "", "api.example:443"};
  CHECK(status_of("GET /v1 HTTP/1.1\r\nHost: api.example\r\n\r\n", tunnel) == 0);
  CHECK(status_of("GET /v1 HTTP/1.1\r\nHost: API.example:443\r\n\r\n", tunnel) == 0);
  // Another host, another port, two Hosts, no Host: refused.
  CHECK(status_of("GET /v1 HTTP/1.1\r\nHost: other.example\r\n\r\n", tunnel) == 421);
  CHECK(status_of("GET /v1 HTTP/1.1\r\nHost: api.example:8443\r\n\r\n", tunnel) == 421);
  CHECK(status_of("GET /v1 HTTP/1.1\r\nHost: api.example\r\nHost: other.example\r\n\r\n", tunnel) ==
        400);
  CHECK(status_of("GET /v1 HTTP/1.1\r\n\r\n", tunnel) == 400);
  // An absolute URL (even for the same host) or an asterisk: not a path.
  CHECK(status_of("GET https://other.example/ HTTP/1.1\r\nHost: api.example\r\n\r\n", tunnel) ==
        400);
  CHECK(status_of("OPTIONS * HTTP/1.1\r\nHost: api.example\r\n\r\n", tunnel) == 400);
  // Framed by anything but Content-Length.
  CHECK(status_of("POST /v1 HTTP/1.1\r\nHost: api.example\r\nTransfer-Encoding: chunked\r\n\r\n",
                  tunnel) == 400);
  auto refusal = sandgate::egress::terminated_request_refusal(
      head_of("GET / HTTP/1.1\r\nHost: other.example\r\n\r\n"), tunnel);
  CHECK(refusal.reason ==
        "a request for another host than api.example:443 inside its TLS connection is refused");

  sandgate::egress::ProxyTarget literal{true, "127.0.0.2", 8443, "", "127.0.0.2:8443"};
  CHECK(status_of("GET / HTTP/1.1\r\nHost: 127.0.0.2:8443\r\n\r\n", literal) == 0);
  CHECK(status_of("GET / HTTP/1.1\r\nHost: 127.0.0.3:8443\r\n\r\n", literal) == 421);
  sandgate::egress::ProxyTarget v6{true, "::1", 443, "", "[::1]:443"};
  CHECK(status_of("GET / HTTP/1.1\r\nHost: [::1]\r\n\r\n", v6) == 0);
  CHECK(status_of("GET / HTTP/1.1\r\nHost: [::1]:443\r\n\r\n", v6) == 0);
}
