// The URLs the OAuth resource server accepts to fetch or name (auth/http_url).
#include "auth/http_url.hpp"

#include <catch2/catch.hpp>
#include <string>

using namespace sandgate::auth;

TEST_CASE("the URLs the gateway fetches are https, or http on loopback, and nothing odd",
          "[unit][oauth]") {
  std::string problem;
  auto url = parse_http_url("https://idp.example.com:8443/realms/main?x=1", problem);
  REQUIRE(url);
  CHECK(url->host == "idp.example.com");
  CHECK(url->port == "8443");
  CHECK(url->target == "/realms/main?x=1");
  CHECK(url->path == "/realms/main");
  CHECK(url->origin() == "https://idp.example.com:8443");
  CHECK(parse_http_url("https://idp.example.com", problem)->target == "/");
  CHECK(parse_http_url("http://127.0.0.1:9000/", problem)->origin() == "http://127.0.0.1:9000");
  CHECK(parse_http_url("https://[::1]:8443/x", problem)->origin() == "https://[::1]:8443");
  for (const char* bad :
       {"http://idp.example.com/", "ftp://idp.example.com/", "https://user@idp.example.com/",
        "https://idp.example.com/#frag", "https://idp.example.com:0/",
        "https://idp.example.com:99999/", "https://[evil.example]/", "https://idp example.com/",
        "https:///path", "idp.example.com", "https://idp.example.com\\@evil.example/",
        "http://127.0.0.1.evil.example/"}) {
    INFO(bad);
    CHECK_FALSE(parse_http_url(bad, problem));
    CHECK_FALSE(problem.empty());
  }
}
