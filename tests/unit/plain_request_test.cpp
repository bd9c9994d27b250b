// A plain (not CONNECT) proxy request's head (egress/plain_request): the ones relayed, and the
// ones refused because something other than Content-Length would frame their body.
#include "egress/plain_request.hpp"

#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/parser.hpp>
#include <catch2/catch.hpp>
#include <string>

namespace {

// A plain proxy request's head as the relay parses it.
boost::beast::http::request<boost::beast::http::empty_body> head_of(const std::string& text) {
  boost::beast::http::request_parser<boost::beast::http::empty_body> parser;
  parser.body_limit(boost::none);
  boost::beast::error_code ec;
  parser.put(boost::asio::buffer(text), ec);
  INFO(text);
  REQUIRE_FALSE(ec);
  REQUIRE(parser.is_header_done());
  return parser.release();
}

}  // namespace

TEST_CASE("a plain request is relayed only when Content-Length alone frames it", "[unit][egress]") {
  using sandgate::egress::plain_request_refusal;
  const std::string post = "POST http://deb.example/ HTTP/1.1\r\nHost: deb.example\r\n";
  CHECK(plain_request_refusal(head_of(post + "Content-Length: 5\r\n\r\n")).empty());
  CHECK(plain_request_refusal(head_of(post + "Connection: keep-alive, X-Trace\r\n\r\n")).empty());
  // Issue #41: dropping Content-Length as hop-by-hop while relaying its bytes sent the body on
  // as a second request of the sandbox's choosing.
  for (std::string named :
       {"Content-Length", "content-length", "Host", "Transfer-Encoding", "Proxy-Authorization",
        "proxy-anything", "keep-alive,  CONTENT-LENGTH"}) {
    INFO(named);
    auto why = plain_request_refusal(
        head_of(post + "Connection: " + named + "\r\nContent-Length: 5\r\n\r\n"));
    // One fixed reason: it names no byte of the request (it goes into a status line and the log).
    CHECK(why ==
          "a Connection header naming Content-Length, Host, Transfer-Encoding or a Proxy- header "
          "is not proxied");
  }
  CHECK(plain_request_refusal(head_of(post + "Connection: close\r\nConnection: Host\r\n\r\n"))
            .find("a Connection header naming") == 0);
  CHECK(plain_request_refusal(
            head_of(post + "Transfer-Encoding: gzip\r\nContent-Length: 5\r\n\r\n")) ==
        "a request body with Transfer-Encoding is not proxied; send Content-Length");
}
