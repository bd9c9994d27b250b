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

// Issue #44: a secret's header replaces every header of its name the sandbox sent, whatever
// their case, and nothing else changes.
TEST_CASE("a request to a host carrying a secret gets the secret's header, never the sandbox's",
          "[unit][egress][secrets]") {
  using sandgate::egress::plain_request_head;
  sandgate::egress::HeaderSecret secret;
  secret.name = "api";
  secret.destination = sandgate::egress::AllowList::parse("api.example");
  secret.header = "Authorization";
  secret.value = "Bearer the-real-key";
  sandgate::egress::ProxyTarget target{false, "api.example", 80, "/v1?q=1", "api.example"};
  auto request = head_of(
      "GET http://api.example/v1?q=1 HTTP/1.1\r\nHost: api.example\r\n"
      "authorization: Bearer sandbox-made-up\r\nX-Keep: 1\r\nAUTHORIZATION: another\r\n\r\n");
  std::string head = plain_request_head(request, target, false, &secret);
  INFO(head);
  CHECK(head.find("sandbox-made-up") == std::string::npos);
  CHECK(head.find("another") == std::string::npos);
  CHECK(head.find("Authorization: Bearer the-real-key\r\n") != std::string::npos);
  CHECK(head.find("X-Keep: 1\r\n") != std::string::npos);
  CHECK(head.rfind("GET /v1?q=1 HTTP/1.1\r\n", 0) == 0);
  CHECK(head.ends_with("Host: api.example\r\nConnection: close\r\n\r\n"));

  // Without a secret, the sandbox's header goes as it was (another host is never given it).
  std::string plain = plain_request_head(request, target, false);
  CHECK(plain.find("the-real-key") == std::string::npos);
  CHECK(plain.find("authorization: Bearer sandbox-made-up\r\n") != std::string::npos);

  // Kept alive (a terminated TLS connection): Expect is answered by the relay, not passed on.
  auto expecting = head_of(
      "POST /v1 HTTP/1.1\r\nHost: api.example\r\nExpect: 100-continue\r\n"
      "Content-Length: 3\r\n\r\n");
  std::string kept = plain_request_head(expecting, target, false, &secret, true);
  CHECK(kept.find("Expect") == std::string::npos);
  CHECK(kept.ends_with("Connection: keep-alive\r\n\r\n"));
  CHECK(kept.find("Content-Length: 3\r\n") != std::string::npos);
}
