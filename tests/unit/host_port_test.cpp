// host[:port] and ports (common/host_port.hpp): the one reading every caller shares — the Host
// and Origin checks, the OAuth URLs, the egress allow-list and the egress proxy's targets. The
// cases of each caller's former parser are here, plus hostile ones; then the callers on the same
// texts, so that none can drift back to rules of its own.
#include "common/host_port.hpp"

#include <catch2/catch.hpp>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <variant>
#include <vector>

#include "auth/http_url.hpp"
#include "egress/allow_list.hpp"
#include "egress/proxy_request.hpp"
#include "server/gateway/config.hpp"
#include "server/mcp/admission.hpp"

using sandgate::HostPort;
using sandgate::HostPortError;
using sandgate::parse_port;
using sandgate::split_host_port;

namespace {

using namespace std::string_literals;

HostPort parts(std::string_view text) {
  auto split = split_host_port(text);
  INFO("text: " << text);
  REQUIRE(std::holds_alternative<HostPort>(split));
  return std::get<HostPort>(split);
}

std::optional<HostPortError> error_of(std::string_view text) {
  auto split = split_host_port(text);
  if (auto* error = std::get_if<HostPortError>(&split)) return *error;
  return std::nullopt;
}

bool allow_list_takes(const std::string& entry) {
  try {
    sandgate::egress::AllowList::parse(entry);
    return true;
  } catch (const std::invalid_argument&) {
    return false;
  }
}

bool connect_takes(const std::string& target) {
  return std::holds_alternative<sandgate::egress::ProxyTarget>(
      sandgate::egress::parse_proxy_target(true, target));
}

std::optional<HostPortError> listen_error_of(std::string_view text) {
  auto split = sandgate::split_listen_address(text);
  if (auto* error = std::get_if<HostPortError>(&split)) return *error;
  return std::nullopt;
}

// The gateway's configuration with these flags (and a token), or nullopt when it is refused.
std::optional<sandgate::server::Config> configured(std::vector<std::string> args) {
  std::vector<char*> argv{const_cast<char*>("sandgate")};
  for (auto& a : args) argv.push_back(a.data());
  std::string token = "SANDGATE_TOKEN=t";
  char* envp[] = {token.data(), nullptr};
  return sandgate::server::parse_config(static_cast<int>(argv.size()), argv.data(), envp).config;
}

bool oauth_url_takes(const std::string& authority) {
  std::string problem;
  return sandgate::auth::parse_http_url("https://" + authority + "/", problem).has_value();
}

}  // namespace

TEST_CASE("host[:port] splits into a host as written and an optional port", "[unit][host_port]") {
  auto named = parts("PyPI.org.:443");
  CHECK(named.host == "PyPI.org.");  // case and trailing dot: the caller's to fold
  CHECK_FALSE(named.ipv6);
  CHECK(named.port == std::uint16_t{443});
  auto bare = parts("mirror.internal");
  CHECK(bare.host == "mirror.internal");
  CHECK_FALSE(bare.port);
  CHECK(parts("10.1.2.3:3128").host == "10.1.2.3");
  CHECK(parts("a_b-c.example").host == "a_b-c.example");
  CHECK(parts("localhost:1").port == std::uint16_t{1});
  CHECK(parts("localhost:65535").port == std::uint16_t{65535});
  // An IPv6 literal in brackets, with or without a port; the brackets are not part of the host.
  auto v6 = parts("[FD00::1]:8443");
  CHECK(v6.host == "FD00::1");
  CHECK(v6.ipv6);
  CHECK(v6.port == std::uint16_t{8443});
  CHECK(parts("[::1]").host == "::1");
  CHECK_FALSE(parts("[::1]").port);
  CHECK(parts("[::ffff:10.0.0.5]:80").host == "::ffff:10.0.0.5");
  // Names some resolvers read as addresses split like any name: refusing them is egress's rule.
  CHECK(parts("2130706433:443").host == "2130706433");
}

TEST_CASE("what is not host[:port] is refused, and why", "[unit][host_port]") {
  struct Bad {
    std::string text;
    HostPortError error;
  };
  const Bad bad[] = {
      // No host.
      {"", HostPortError::empty_host},
      {":80", HostPortError::empty_host},
      {":", HostPortError::empty_host},
      // Ports: decimal 1..65535, one spelling each.
      {"host:", HostPortError::missing_port},
      {"[::1]:", HostPortError::missing_port},
      {"host:0", HostPortError::bad_port},
      {"host:65536", HostPortError::bad_port},
      {"host:99999", HostPortError::bad_port},
      {"host:123456", HostPortError::bad_port},
      {"host:000000000443", HostPortError::bad_port},  // overlong
      {"host:0443", HostPortError::bad_port},
      {"host:+80", HostPortError::bad_port},
      {"host:-1", HostPortError::bad_port},
      {"host: 80", HostPortError::bad_port},
      {"host:80 ", HostPortError::bad_port},
      {"host:8o", HostPortError::bad_port},
      {"host:44x", HostPortError::bad_port},
      {"host:0x50", HostPortError::bad_port},
      {"host:80\0"s, HostPortError::bad_port},
      {"[fd00::5ec]:0", HostPortError::bad_port},
      {"https://secret.example", HostPortError::bad_port},
      {"127.0.0.1:80@evil", HostPortError::bad_port},
      // Hosts: no user information, path, spaces, control characters or NUL.
      {"user@host:443", HostPortError::bad_host},
      {"user:pw@host", HostPortError::bad_port},
      {"host/simple", HostPortError::bad_host},
      {"secret example", HostPortError::bad_host},
      {" host:80", HostPortError::bad_host},
      {"host :80", HostPortError::bad_host},
      {"pypi.org\r\nX: y:443", HostPortError::bad_host},
      {"ho\0st:80"s, HostPortError::bad_host},
      {"s\xC3\xA9"
       "cret.example",
       HostPortError::bad_host},
      {"*.example.com", HostPortError::bad_host},  // a wildcard is the allow-list's own
      {"host%2e:80", HostPortError::bad_host},
      {"host\\@evil", HostPortError::bad_host},
      {"host]:80", HostPortError::bad_host},
      // An unbracketed ':' too many: an IPv6 literal, or junk, cannot be told from a port.
      {"a:b:c", HostPortError::bad_host},
      {"fd00::1:443", HostPortError::bad_host},
      {"::1", HostPortError::empty_host},
      {"host:443:1", HostPortError::bad_host},
      // Brackets: an IPv6 literal, closed, then nothing or ":port".
      {"[::1", HostPortError::unclosed_bracket},
      {"[fd00::5ec", HostPortError::unclosed_bracket},
      {"[::1]x", HostPortError::after_bracket},
      {"[::1].evil.example", HostPortError::after_bracket},
      {"[fd00::5ec]secret", HostPortError::after_bracket},
      {"[::1]:80]", HostPortError::bad_port},
      {"[]", HostPortError::not_ipv6},
      {"[]:80", HostPortError::not_ipv6},
      {"[10.1.2.3]", HostPortError::not_ipv6},
      {"[secret.example]", HostPortError::not_ipv6},
      {"[evil.example]", HostPortError::not_ipv6},
      {"[fe80::5ec%eth0]:443", HostPortError::not_ipv6},
      {"[::1\0]"s, HostPortError::not_ipv6},
      {"[ ::1]", HostPortError::not_ipv6},
      {"[v1.fe]", HostPortError::not_ipv6},
      {"[[::1]]", HostPortError::not_ipv6},
  };
  for (const auto& [text, error] : bad) {
    INFO("text: " << text);
    CHECK(error_of(text) == error);
  }
}

TEST_CASE("a port is 1 to 65535 in plain decimal digits", "[unit][host_port]") {
  CHECK(parse_port("1") == std::uint16_t{1});
  CHECK(parse_port("80") == std::uint16_t{80});
  CHECK(parse_port("8443") == std::uint16_t{8443});
  CHECK(parse_port("65535") == std::uint16_t{65535});
  for (std::string bad : {""s,
                          "0"s,
                          "00"s,
                          "080"s,
                          "00080"s,
                          "65536"s,
                          "99999"s,
                          "100000"s,
                          "4294967377"s,
                          "+80"s,
                          "-80"s,
                          " 80"s,
                          "80 "s,
                          "8 0"s,
                          "8o"s,
                          "0x50"s,
                          "1e3"s,
                          "80\0"s,
                          "\0"s
                          "80",
                          "８０"s}) {
    INFO("port: " << bad);
    CHECK_FALSE(parse_port(bad));
  }
}

TEST_CASE("a listening address needs its port, and 0 lets the kernel pick one",
          "[unit][host_port]") {
  auto any = std::get<HostPort>(sandgate::split_listen_address("127.0.0.1:0"));
  CHECK(any.host == "127.0.0.1");
  CHECK(any.port == std::uint16_t{0});
  auto v6 = std::get<HostPort>(sandgate::split_listen_address("[::]:8080"));
  CHECK(v6.host == "::");
  CHECK(v6.ipv6);
  CHECK(v6.port == std::uint16_t{8080});
  CHECK(std::get<HostPort>(sandgate::split_listen_address("localhost:65535")).port ==
        std::uint16_t{65535});
  // The rest as any host:port: "0" is the only spelling of any port.
  CHECK(listen_error_of("localhost") == HostPortError::missing_port);
  CHECK(listen_error_of("[::1]") == HostPortError::missing_port);
  CHECK(listen_error_of("localhost:") == HostPortError::missing_port);
  CHECK(listen_error_of("localhost:00") == HostPortError::bad_port);
  CHECK(listen_error_of("localhost:080") == HostPortError::bad_port);
  CHECK(listen_error_of("localhost:65536") == HostPortError::bad_port);
  CHECK(listen_error_of("localhost:-0") == HostPortError::bad_port);
  CHECK(listen_error_of("fd00::1:8080") == HostPortError::bad_host);
  CHECK(listen_error_of("::1:8080") == HostPortError::empty_host);
  CHECK(listen_error_of(":8080") == HostPortError::empty_host);
  CHECK(listen_error_of("[::1]8080") == HostPortError::after_bracket);
}

TEST_CASE("the gateway's own addresses read host:port alike", "[unit][host_port][config]") {
  // --listen: the host as written (an IPv6 literal without its brackets) and the port, 0 too.
  auto v6 = configured({"--listen", "[::1]:0"});
  REQUIRE(v6);
  CHECK(v6->http.listen_host == "::1");
  CHECK(v6->http.listen_port == 0);
  auto named = configured({"--listen", "localhost:8080"});
  REQUIRE(named);
  CHECK(named->http.listen_host == "localhost");
  CHECK(named->http.listen_port == 8080);
  for (std::string bad : {"localhost"s, "127.0.0.1:"s, "127.0.0.1:65536"s, "127.0.0.1:+80"s,
                          "127.0.0.1:080"s, "::1:8080"s, "[::1"s, ":8080"s, "user@host:80"s}) {
    INFO("--listen " << bad);
    CHECK_FALSE(configured({"--listen", bad}));
  }
  // --peers: each URL's authority is one the forwarder can connect to.
  CHECK(configured({"--peers", "a=http://10.0.0.5:8080,b=http://[fd00::1]:8080/,c=http://b.svc"}));
  for (std::string bad : {"a=http://10.0.0.5:0"s, "a=http://host:80x"s, "a=http://fd00::1:80"s,
                          "a=http://u@host:80"s, "a=http://"s, "a=http://[::1"s}) {
    INFO("--peers " << bad);
    CHECK_FALSE(configured({"--peers", bad}));
  }
  // --peer-url-template: its port as any destination's port.
  CHECK(configured({"--peer-url-template", "http://{replica}.peers:65535/x"}));
  for (std::string bad : {"http://{replica}.peers:0"s, "http://{replica}.peers:080"s,
                          "http://{replica}.peers:65536"s, "http://{replica}.peers:"s,
                          "http://{replica}.peers:8080:1"s, "http://{replica}.peers:8o"s}) {
    INFO("--peer-url-template " << bad);
    CHECK_FALSE(configured({"--peer-url-template", bad}));
  }
}

TEST_CASE("an IPv6 host is bracketed when written into an authority", "[unit][host_port]") {
  CHECK(sandgate::bracket_host("fd00::1") == "[fd00::1]");
  CHECK(sandgate::bracket_host("pypi.org") == "pypi.org");
  CHECK(sandgate::bracket_host("10.0.0.5") == "10.0.0.5");
}

TEST_CASE("every caller reads host:port alike", "[unit][host_port]") {
  // Refused by the OAuth URLs, the allow-list and CONNECT alike (each may refuse more: a
  // CONNECT needs a port, the allow-list and the proxy refuse names that are numbers).
  for (std::string bad :
       {"host:"s, ":80"s, "host:0"s, "host:65536"s, "host:0443"s, "host:+80"s, "host: 80"s,
        "host:000000000443"s, "[::1"s, "[::1]x"s, "[::1]:"s, "[10.0.0.1]:443"s, "a:b:443"s,
        "[fe80::1%eth0]:443"s, "ho\0st:443"s, "host:44\0"s, "ho st:443"s}) {
    INFO("authority: " << bad);
    CHECK_FALSE(oauth_url_takes(bad));
    CHECK_FALSE(allow_list_takes(bad));
    CHECK_FALSE(connect_takes(bad));
  }
  for (std::string good : {"idp.example.com:8443"s, "[fd00::1]:443"s, "10.0.0.5:3128"s}) {
    INFO("authority: " << good);
    CHECK(oauth_url_takes(good));
    CHECK(allow_list_takes(good));
    CHECK(connect_takes(good));
  }
  // The allow-list's own spelling: a bare IPv6 address, without a port.
  CHECK(allow_list_takes("fd00::2"));
  CHECK_FALSE(connect_takes("fd00::1:443"));
  CHECK_FALSE(oauth_url_takes("fd00::1:443"));
}

TEST_CASE("the Host and Origin checks read host:port alike", "[unit][host_port][transport]") {
  sandgate::server::Metrics metrics;
  sandgate::server::Admission admission({.allowed_origins = {}, .allowed_hosts = {"[fd00::1]"}},
                                        /*listening_on_loopback=*/true, nullptr, nullptr, metrics);
  for (std::string good : {"localhost"s, "localhost:8080"s, "LocalHost:3000"s, "127.1.2.3:8080"s,
                           "[::1]:8080"s, "[::1]"s, "[fd00::1]:443"s}) {
    INFO("host: " << good);
    CHECK(admission.host_allowed(good));
  }
  // Before one parser: "localhost:" and ports past 65535 or 0 were taken as loopback.
  for (std::string bad :
       {"localhost:"s, "localhost:0"s, "localhost:99999"s, "localhost:080"s, "localhost:+80"s,
        "127.0.0.1:80@evil"s, "[::1].evil.example"s, "[::1"s, "::1"s, "127.evil.example:8080"s,
        "127.0.0.1.evil.example"s, "localhost.:80"s, "localhost\0.evil"s, "local host"s, ""s}) {
    INFO("host: " << bad);
    CHECK_FALSE(admission.host_allowed(bad));
  }
  CHECK(admission.origin_allowed("http://[::1]:80"));
  CHECK(admission.origin_allowed("http://127.0.0.1:6274"));
  for (std::string bad : {"http://localhost:"s, "http://127.0.0.1:0"s, "http://[::1]x"s,
                          "http://127.0.0.1:80@evil"s, "http://[::1].evil"s, "http://:80"s}) {
    INFO("origin: " << bad);
    CHECK_FALSE(admission.origin_allowed(bad));
  }
}
