// Where a proxy request wants to go (egress/proxy_request): the targets clients send, and the
// ones the proxy refuses before it looks at the allow-list.
#include "egress/proxy_request.hpp"

#include <catch2/catch.hpp>
#include <string>
#include <variant>

using sandgate::egress::parse_proxy_target;
using sandgate::egress::ProxyTarget;

namespace {

ProxyTarget target(bool connect, const std::string& text) {
  auto parsed = parse_proxy_target(connect, text);
  INFO(text);
  REQUIRE(std::holds_alternative<ProxyTarget>(parsed));
  return std::get<ProxyTarget>(parsed);
}

std::string refusal(bool connect, const std::string& text) {
  auto parsed = parse_proxy_target(connect, text);
  INFO(text);
  REQUIRE(std::holds_alternative<std::string>(parsed));
  return std::get<std::string>(parsed);
}

}  // namespace

TEST_CASE("a CONNECT names host and port, a name or a literal", "[unit][egress]") {
  auto pypi = target(true, "PyPI.org.:443");
  CHECK(pypi.tunnel);
  CHECK(pypi.host == "pypi.org");
  CHECK(pypi.port == 443);
  CHECK(pypi.authority == "pypi.org:443");
  auto v6 = target(true, "[FD00::1]:8443");
  CHECK(v6.host == "fd00::1");
  CHECK(v6.authority == "[fd00::1]:8443");
  CHECK(target(true, "10.0.0.5:3128").host == "10.0.0.5");
  CHECK(refusal(true, "pypi.org") == "CONNECT needs host:port");
  CHECK(refusal(true, "pypi.org:0") == "a malformed port");
  CHECK(refusal(true, "pypi.org:65536") == "a malformed port");
  CHECK(refusal(true, "pypi.org:44x") == "a malformed port");
  CHECK(refusal(true, "fd00::1:443") == "a malformed host");  // unbracketed IPv6: ambiguous
  CHECK(refusal(true, "user@pypi.org:443") == "a URL with user information is not proxied");
  CHECK(refusal(true, "2130706433:443") == "a malformed host");  // 127.0.0.1 to some resolvers
  CHECK(refusal(true, "pypi.org\r\nX: y:443") == "a malformed host");
}

TEST_CASE("a plain request names an absolute http URL, sent on in origin form", "[unit][egress]") {
  auto plain = target(false, "http://Mirror.Internal:8080/simple/numpy/?x=1");
  CHECK_FALSE(plain.tunnel);
  CHECK(plain.host == "mirror.internal");
  CHECK(plain.port == 8080);
  CHECK(plain.origin_form == "/simple/numpy/?x=1");
  CHECK(plain.authority == "mirror.internal:8080");
  auto bare = target(false, "HTTP://deb.example");
  CHECK(bare.port == 80);
  CHECK(bare.origin_form == "/");
  CHECK(bare.authority == "deb.example");
  CHECK(target(false, "http://deb.example?q").origin_form == "/?q");
  CHECK(target(false, "http://deb.example#frag").origin_form == "/");
  CHECK(target(false, "http://[::1]:81/x").authority == "[::1]:81");
  CHECK(refusal(false, "https://pypi.org/simple/") ==
        "an https URL must be fetched through CONNECT");
  CHECK(refusal(false, "/simple/") == "a proxy request needs an absolute http:// URL");
  CHECK(refusal(false, "http://user:pw@deb.example/") ==
        "a URL with user information is not proxied");
  CHECK(refusal(false, "http:///x") == "a malformed host");
  CHECK(refusal(false, "http://deb.example:/x") == "a malformed host");
}
