// A tenant's egress allow-list (egress/allow_list): how it parses, what its entries allow, and
// how a host is written the way entries are.
#include "egress/allow_list.hpp"

#include <boost/asio/ip/address.hpp>
#include <catch2/catch.hpp>
#include <cstdint>
#include <stdexcept>
#include <string>

using sandgate::egress::AllowList;
using sandgate::egress::normalise_host;

namespace {

namespace ip = boost::asio::ip;

// The error a parse throws, "" when it does not.
std::string parse_error(const std::string& text) {
  try {
    AllowList::parse(text);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("an allow-list parses into canonical entries", "[unit][egress]") {
  auto list = AllowList::parse(
      " PyPI.org. ,*.PythonHosted.org,mirror.internal:8443,10.1.2.3:3128,[FD00::1]:443,"
      "fd00::2,[fd00::3],a_b-c.example");
  REQUIRE(list.entries().size() == 8);
  const auto& e = list.entries();
  CHECK(e[0].host == "pypi.org");
  CHECK_FALSE(e[0].wildcard);
  CHECK_FALSE(e[0].literal);
  CHECK_FALSE(e[0].port);
  CHECK(e[1].host == "pythonhosted.org");
  CHECK(e[1].wildcard);
  CHECK(e[2].port == std::uint16_t{8443});
  CHECK(e[3].literal == ip::make_address("10.1.2.3"));
  CHECK(e[3].port == std::uint16_t{3128});
  CHECK(e[4].host == "fd00::1");
  CHECK(e[4].literal == ip::make_address("fd00::1"));
  CHECK(e[5].host == "fd00::2");
  CHECK_FALSE(e[5].port);
  CHECK(e[6].host == "fd00::3");
  CHECK(e[7].host == "a_b-c.example");
  auto text = list.to_text();
  CHECK(text ==
        "pypi.org,*.pythonhosted.org,mirror.internal:8443,10.1.2.3:3128,[fd00::1]:443,"
        "[fd00::2],[fd00::3],a_b-c.example");
  CHECK(AllowList::parse(text).to_text() == text);
  CHECK(AllowList::parse("a:1,b:65535").to_text() == "a:1,b:65535");
  CHECK(AllowList().empty());
}

TEST_CASE("names up to 63 per label and 253 in all are allowed", "[unit][egress]") {
  std::string label(63, 'a');
  std::string name = label + "." + label + "." + label + "." + std::string(61, 'b');
  REQUIRE(name.size() == 253);
  CHECK(AllowList::parse(name).entries()[0].host == name);
  CHECK(AllowList::parse(name + ".").entries()[0].host == name);
  CHECK_FALSE(parse_error(name + "b").empty());
  CHECK_FALSE(parse_error(std::string(64, 'a') + ".example").empty());
}

TEST_CASE("a bad allow-list entry is refused by position, never by its text", "[unit][egress]") {
  struct Bad {
    std::string entry;
    std::string reason;  // part of the message
  };
  const std::vector<Bad> bad{
      // Empty.
      {"", "empty"},
      {"   ", "empty"},
      // Ports.
      {"secret.example:0", "port"},
      {"secret.example:65536", "port"},
      {"secret.example:123456", "port"},
      {"secret.example:", "port"},
      {"secret.example:+80", "port"},
      {"secret.example:8o", "port"},
      {"secret.example: 80", "port"},
      {"secret.example:-1", "port"},
      {"[fd00::5ec]:0", "port"},
      {"[fd00::5ec]:", "port"},
      // Wildcards.
      {"*", "wildcard"},
      {"*secret.example", "wildcard"},
      {"**.secret.example", "wildcard"},
      {"*.10.1.2.3", "wildcard"},
      {"*.[fd00::5ec]", "wildcard"},
      {"*.", "not a valid host"},
      {"secret.*.example", "not a valid host"},
      {"secret.example.*", "not a valid host"},
      // IPv6 and brackets.
      {"fd00::5ec:44300000", "brackets"},
      {"[fd00::5ec", "'['"},
      {"[fd00::5ec]secret", "']'"},
      {"[10.1.2.3]", "brackets"},
      {"[secret.example]", "brackets"},
      {"fe80::5ec%eth0", "not a valid host"},
      {"[fe80::5ec%eth0]:443", "brackets"},
      {"secret.example:443:1", "not a valid host"},
      // Names.
      {"https://secret.example", "port"},
      {"secret.example/simple", "not a valid host"},
      {"secret..example", "not a valid host"},
      {".secret.example", "not a valid host"},
      {"secret example", "not a valid host"},
      {"s\xC3\xA9"
       "cret.example",
       "not a valid host"},
      {"secret.example..", "not a valid host"},
      // Numbers some resolvers read as an IPv4 address.
      {"1.2.3", "not a valid host"},
      {"127.1", "not a valid host"},
      {"0x7f.1", "not a valid host"},
      {"0x7f.0x1", "not a valid host"},
      {"0x7f000001", "not a valid host"},
      {"2130706433", "not a valid host"},
      {"10.1.2.03", "not a valid host"},
      {"010.1.2.3", "not a valid host"},
      {"1.2.3.4.5", "not a valid host"},
      {"secret.example.123", "not a valid host"},
  };
  for (const auto& [entry, reason] : bad) {
    INFO("entry: " << entry);
    auto message = parse_error("pypi.org, " + entry + " ,files.example");
    CHECK(message.rfind("egress entry 2: ", 0) == 0);
    CHECK_THAT(message, Catch::Contains(reason));
    if (entry.size() > 3) CHECK_THAT(message, !Catch::Contains(entry));
    CHECK_THAT(message, !Catch::Contains("secret"));
    CHECK_THAT(message, !Catch::Contains("5ec"));
  }
  CHECK(parse_error("") == "egress entry 1: empty");
  CHECK(parse_error("pypi.org,") == "egress entry 2: empty");
  CHECK(parse_error(",pypi.org") == "egress entry 1: empty");
  CHECK(parse_error("a,b,,c") == "egress entry 3: empty");
}

TEST_CASE("a name is allowed on the scheme's default port unless its entry names one",
          "[unit][egress]") {
  auto list = AllowList::parse("pypi.org,mirror.internal:8443");
  // CONNECT (TLS) defaults to 443, a plain-HTTP request to 80.
  CHECK(list.allows("pypi.org", 443, 443));
  CHECK(list.allows("pypi.org", 80, 80));
  CHECK_FALSE(list.allows("pypi.org", 80, 443));
  CHECK_FALSE(list.allows("pypi.org", 443, 80));
  CHECK_FALSE(list.allows("pypi.org", 8443, 443));
  // An explicit port is that port only, for either scheme.
  CHECK(list.allows("mirror.internal", 8443, 443));
  CHECK(list.allows("mirror.internal", 8443, 80));
  CHECK_FALSE(list.allows("mirror.internal", 443, 443));
  CHECK_FALSE(list.allows("mirror.internal", 80, 80));
  // Case and one trailing dot do not matter, anything else does.
  CHECK(list.allows("PyPI.ORG", 443, 443));
  CHECK(list.allows("pypi.org.", 443, 443));
  CHECK_FALSE(list.allows("pypi.org..", 443, 443));
  CHECK_FALSE(list.allows("evilpypi.org", 443, 443));
  CHECK_FALSE(list.allows("pypi.org.evil.example", 443, 443));
  CHECK_FALSE(list.allows("www.pypi.org", 443, 443));
  CHECK_FALSE(list.allows("pypi.org:443", 443, 443));
  CHECK_FALSE(list.allows("", 443, 443));
  CHECK_FALSE(AllowList().allows("pypi.org", 443, 443));
}

TEST_CASE("a wildcard allows every name strictly below it", "[unit][egress]") {
  auto list = AllowList::parse("*.pythonhosted.org,*.internal:8080");
  CHECK(list.allows("files.pythonhosted.org", 443, 443));
  CHECK(list.allows("a.b.PythonHosted.org.", 443, 443));
  CHECK_FALSE(list.allows("pythonhosted.org", 443, 443));
  CHECK_FALSE(list.allows("evilpythonhosted.org", 443, 443));
  CHECK_FALSE(list.allows(".pythonhosted.org", 443, 443));
  CHECK_FALSE(list.allows("files.pythonhosted.org", 80, 443));
  CHECK(list.allows("mirror.internal", 8080, 443));
  CHECK_FALSE(list.allows("mirror.internal", 443, 443));
}

TEST_CASE("literal entries match addresses, IPv4-mapped IPv6 as its IPv4", "[unit][egress]") {
  auto list =
      AllowList::parse("pypi.org,10.0.0.5,[fd00::1]:443,[::ffff:10.0.0.6],192.168.1.1:3128");
  CHECK(list.allows("10.0.0.5", 443, 443));
  CHECK(list.allows("10.0.0.5", 80, 80));
  CHECK(list.allows("::ffff:10.0.0.5", 443, 443));
  CHECK(list.allows("[::ffff:10.0.0.5]", 443, 443));
  CHECK(list.allows("[::ffff:a00:5]", 443, 443));
  CHECK(list.allows("10.0.0.6", 443, 443));
  CHECK_FALSE(list.allows("10.0.0.7", 443, 443));
  CHECK_FALSE(list.allows("010.0.0.5", 443, 443));
  CHECK_FALSE(list.allows("167772165", 443, 443));
  CHECK_FALSE(list.allows("[10.0.0.5]", 443, 443));
  // IPv6 with or without brackets, in any spelling.
  CHECK(list.allows("[fd00::1]", 443, 443));
  CHECK(list.allows("fd00::1", 443, 80));
  CHECK(list.allows("[FD00:0:0::0001]", 443, 443));
  CHECK_FALSE(list.allows("fd00::1", 80, 80));
  CHECK_FALSE(list.allows("[fd00::1]:443", 443, 443));
  CHECK_FALSE(list.allows("fe80::1%eth0", 443, 443));
  CHECK(list.allows("192.168.1.1", 3128, 80));
  // A name entry is not its address, nor an address entry a name.
  CHECK_FALSE(list.allows("151.101.0.223", 443, 443));
  CHECK_FALSE(AllowList::parse("10.0.0.5").allows("ten.example", 443, 443));
}

TEST_CASE("names_literal finds entries that name an address, for their port", "[unit][egress]") {
  auto list = AllowList::parse("pypi.org,10.0.0.5:8080,[fd00::1]:443,[::ffff:10.0.0.6]");
  CHECK(list.names_literal(ip::make_address("10.0.0.5"), 8080, 443));
  CHECK(list.names_literal(ip::make_address("::ffff:10.0.0.5"), 8080, 80));
  CHECK(list.names_literal(ip::make_address("fd00::1"), 443, 80));
  // Without a port, the scheme's default: 443 for a tunnel, 80 for plain HTTP.
  CHECK(list.names_literal(ip::make_address("10.0.0.6"), 443, 443));
  CHECK(list.names_literal(ip::make_address("10.0.0.6"), 80, 80));
  // Another port of a listed address is not listed: a name allowed on 443 that resolves to
  // 10.0.0.5 does not reach 10.0.0.5:443 because 10.0.0.5:8080 is.
  CHECK_FALSE(list.names_literal(ip::make_address("10.0.0.5"), 443, 443));
  CHECK_FALSE(list.names_literal(ip::make_address("10.0.0.6"), 8080, 443));
  CHECK_FALSE(list.names_literal(ip::make_address("10.0.0.7"), 443, 443));
  CHECK_FALSE(list.names_literal(ip::make_address("fd00::2"), 443, 443));
  CHECK_FALSE(list.names_literal(ip::make_address("::10.0.0.5"), 8080, 443));
  CHECK_FALSE(AllowList().names_literal(ip::make_address("10.0.0.5"), 443, 443));
}

TEST_CASE("normalise_host writes a host the way entries are written", "[unit][egress]") {
  CHECK(normalise_host("PyPI.Org.") == "pypi.org");
  CHECK(normalise_host("[FD00::1]") == "fd00::1");
  CHECK(normalise_host("fd00:0::1") == "fd00::1");
  CHECK(normalise_host("10.1.2.3") == "10.1.2.3");
  CHECK(normalise_host("::ffff:127.0.0.1") == "::ffff:127.0.0.1");
  for (const char* bad : {"", ".", "..", "a..b", ".a", "a b", "a/b", "pypi.org:443", "[1.2.3.4]",
                          "[pypi.org]", "[fd00::1", "fe80::1%eth0", "0x7f.1", "2130706433", "127.1",
                          "127.0.0.01", "*.pypi.org", "caf\xC3\xA9.example"}) {
    INFO("host: " << bad);
    CHECK_FALSE(normalise_host(bad));
  }
  CHECK_FALSE(normalise_host(std::string(254, 'a')));
  CHECK_FALSE(normalise_host(std::string(64, 'a')));
  CHECK(normalise_host(std::string(63, 'a')));
}
