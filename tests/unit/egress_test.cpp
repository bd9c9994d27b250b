// The egress proxy's pure parts: the tenant's allow-list, which addresses are not the public
// Internet, and the server name a TLS ClientHello asks for (checked on real ClientHellos that
// OpenSSL writes).
#include <openssl/ssl.h>

#include <algorithm>
#include <boost/asio/ip/address.hpp>
#include <catch2/catch.hpp>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "egress/address_policy.hpp"
#include "egress/allow_list.hpp"
#include "egress/client_hello.hpp"
#include "egress/connection_shares.hpp"

using sandgate::egress::AllowList;
using sandgate::egress::ClientHello;
using sandgate::egress::kMaxClientHelloBytes;
using sandgate::egress::normalise_host;
using sandgate::egress::parse_client_hello;
using sandgate::egress::special_address;

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

std::string special(const char* address) {
  return special_address(ip::make_address(address));
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

TEST_CASE("special IPv4 addresses are named, public ones are not", "[unit][egress]") {
  struct Case {
    const char* address;
    const char* reason;
  };
  const std::string cgnat = "a shared (carrier-grade NAT) address";
  const std::string metadata = "a link-local address (cloud metadata)";
  for (const auto& [address, reason] : std::vector<Case>{
           {"0.0.0.0", "an unspecified address"},
           {"0.255.255.255", "an unspecified address"},
           {"10.0.0.1", "a private address"},
           {"10.255.255.255", "a private address"},
           {"172.16.0.1", "a private address"},
           {"172.31.255.255", "a private address"},
           {"192.168.0.1", "a private address"},
           {"100.64.0.1", cgnat.c_str()},
           {"100.127.255.255", cgnat.c_str()},
           {"127.0.0.1", "a loopback address"},
           {"127.255.255.254", "a loopback address"},
           {"169.254.169.254", metadata.c_str()},
           {"169.254.0.1", metadata.c_str()},
           {"168.63.129.16", "a cloud host address (Azure WireServer)"},
           {"192.0.0.8", "a reserved address"},
           {"192.0.2.1", "a reserved address"},
           {"198.18.0.1", "a reserved address"},
           {"198.19.255.255", "a reserved address"},
           {"198.51.100.7", "a reserved address"},
           {"203.0.113.9", "a reserved address"},
           {"224.0.0.1", "a multicast address"},
           {"239.255.255.250", "a multicast address"},
           {"240.0.0.1", "a reserved address"},
           {"255.255.255.255", "a reserved address"},
           // Public, some just outside the ranges above.
           {"8.8.8.8", ""},
           {"151.101.0.223", ""},
           {"1.1.1.1", ""},
           {"172.15.255.255", ""},
           {"172.32.0.0", ""},
           {"100.63.255.255", ""},
           {"100.128.0.0", ""},
           {"169.253.255.255", ""},
           {"198.17.255.255", ""},
           {"198.20.0.0", ""},
           {"192.0.1.1", ""},
           {"223.255.255.255", ""},
           {"11.0.0.0", ""},
       }) {
    INFO("address: " << address);
    CHECK(special(address) == std::string(reason));
  }
}

TEST_CASE("special IPv6 addresses are named, public ones are not", "[unit][egress]") {
  struct Case {
    const char* address;
    const char* reason;
  };
  const char* ula = "a private (unique local) address";
  const char* metadata = "a link-local address (cloud metadata)";
  for (const auto& [address, reason] : std::vector<Case>{
           {"::", "an unspecified address"},
           {"::1", "a loopback address"},
           // Judged by the IPv4 address they carry: mapped, compatible, NAT64, 6to4.
           {"::ffff:127.0.0.1", "a loopback address"},
           {"::ffff:169.254.169.254", metadata},
           {"::ffff:10.1.2.3", "a private address"},
           {"::ffff:0.0.0.0", "an unspecified address"},
           {"::127.0.0.1", "a loopback address"},
           {"::10.0.0.1", "a private address"},
           {"::2", "an unspecified address"},
           {"64:ff9b::a9fe:a9fe", metadata},
           {"64:ff9b::7f00:1", "a loopback address"},
           {"64:ff9b::c0a8:1", "a private address"},
           {"2002:7f00:1::1", "a loopback address"},
           {"2002:a9fe:a9fe::1", metadata},
           {"2002:c0a8:101::", "a private address"},
           {"2002:e000:1::", "a multicast address"},
           // IPv6's own ranges.
           {"fd00:ec2::254", ula},
           {"fc00::1", ula},
           {"fdff:ffff::1", ula},
           {"fe80::1", "a link-local address"},
           {"febf:ffff::1", "a link-local address"},
           {"fec0::1", "a private address"},
           {"feff::1", "a private address"},
           {"ff02::1", "a multicast address"},
           {"ff0e::101", "a multicast address"},
           {"2001:db8::1", "a reserved address"},
           {"2001:db8:ffff::1", "a reserved address"},
           {"100::1", "a reserved address"},
           {"100::ffff:ffff:ffff:ffff", "a reserved address"},
           {"2001:0:4136:e378:8000:63bf:3fff:fdd2", "a reserved address"},  // Teredo
           {"2001::1", "a reserved address"},
           {"3fff::1", "a reserved address"},
           {"2001:2::1", "a reserved address"},
           {"64:ff9b:1::a00:1", "a reserved address"},
           // Outside 2000::/3 (global unicast) is not the public Internet.
           {"::ffff:0:a00:1", "a reserved address"},
           {"1::1", "a reserved address"},
           {"4000::1", "a reserved address"},
           {"100:0:0:1::1", "a reserved address"},  // outside the discard /64, not outside ::/3
           // Public.
           {"2606:4700::1111", ""},
           {"2a04:4e42::223", ""},
           {"2001:4860:4860::8888", ""},
       }) {
    INFO("address: " << address);
    CHECK(special(address) == std::string(reason));
  }
  // The embedded IPv4 address decides when it is public.
  CHECK(special("::ffff:8.8.8.8").empty());
  CHECK(special("64:ff9b::808:808").empty());
  CHECK(special("2002:808:808::1").empty());
  CHECK(special("2001:200::1").empty());  // just above Teredo's /32
  CHECK(special("2001:db7:ffff::1").empty());
  CHECK(special("2001:db9::1").empty());
}

namespace {

using Bytes = std::vector<unsigned char>;

// The bytes OpenSSL's client sends first: a ClientHello in one handshake record.
Bytes real_client_hello(const char* server_name) {
  std::unique_ptr<SSL_CTX, decltype(&SSL_CTX_free)> context(SSL_CTX_new(TLS_client_method()),
                                                            SSL_CTX_free);
  REQUIRE(context);
  std::unique_ptr<SSL, decltype(&SSL_free)> ssl(SSL_new(context.get()), SSL_free);
  REQUIRE(ssl);
  BIO* from_server = BIO_new(BIO_s_mem());
  BIO* to_server = BIO_new(BIO_s_mem());
  SSL_set_bio(ssl.get(), from_server, to_server);  // the SSL owns both
  if (server_name) REQUIRE(SSL_set_tlsext_host_name(ssl.get(), server_name) == 1);
  int result = SSL_connect(ssl.get());
  REQUIRE(result == -1);
  REQUIRE(SSL_get_error(ssl.get(), result) == SSL_ERROR_WANT_READ);
  Bytes bytes(static_cast<std::size_t>(BIO_pending(to_server)));
  REQUIRE(bytes.size() > 5);
  REQUIRE(BIO_read(to_server, bytes.data(), static_cast<int>(bytes.size())) ==
          static_cast<int>(bytes.size()));
  return bytes;
}

ClientHello::State state_of(const Bytes& bytes) {
  return parse_client_hello(bytes).state;
}

std::size_t get16(const Bytes& b, std::size_t at) {
  return std::size_t{b[at]} << 8 | b[at + 1];
}

void set16(Bytes& b, std::size_t at, std::size_t value) {
  b[at] = static_cast<unsigned char>(value >> 8);
  b[at + 1] = static_cast<unsigned char>(value);
}

void set24(Bytes& b, std::size_t at, std::size_t value) {
  b[at] = static_cast<unsigned char>(value >> 16);
  set16(b, at + 1, value);
}

// The handshake message of a ClientHello in one record.
Bytes handshake_of(const Bytes& record) {
  REQUIRE(record[0] == 22);
  REQUIRE(get16(record, 3) == record.size() - 5);
  return Bytes(record.begin() + 5, record.end());
}

// A handshake message in records of at most `fragment` bytes.
Bytes framed(const Bytes& handshake, std::size_t fragment = 16384) {
  Bytes out;
  for (std::size_t at = 0; at < handshake.size(); at += fragment) {
    auto size = std::min(fragment, handshake.size() - at);
    Bytes header{22, 3, 1, 0, 0};
    set16(header, 3, size);
    out.insert(out.end(), header.begin(), header.end());
    out.insert(out.end(), handshake.begin() + at, handshake.begin() + at + size);
  }
  return out;
}

// Where a ClientHello's fields are, as offsets into its handshake message.
struct Layout {
  std::size_t session_id = 0;        // its length byte
  std::size_t cipher_suites = 0;     // its 2-byte length
  std::size_t extensions = 0;        // the extensions block's 2-byte length
  std::size_t server_name = 0;       // the server_name extension's type (0: none)
  std::size_t server_name_size = 0;  // with its 4-byte header
};

Layout layout_of(const Bytes& hs) {
  Layout layout;
  layout.session_id = 4 + 2 + 32;
  layout.cipher_suites = layout.session_id + 1 + hs[layout.session_id];
  auto compression = layout.cipher_suites + 2 + get16(hs, layout.cipher_suites);
  layout.extensions = compression + 1 + hs[compression];
  for (auto at = layout.extensions + 2; at < hs.size(); at += 4 + get16(hs, at + 2)) {
    if (get16(hs, at) != 0) continue;
    layout.server_name = at;
    layout.server_name_size = 4 + get16(hs, at + 2);
  }
  REQUIRE(layout.extensions + 2 + get16(hs, layout.extensions) == hs.size());
  return layout;
}

// `hs` with `bytes` in place of the `count` bytes at `at`, every enclosing length adjusted.
Bytes spliced(Bytes hs, std::size_t at, std::size_t count, const Bytes& bytes) {
  auto layout = layout_of(hs);
  hs.erase(hs.begin() + at, hs.begin() + at + count);
  hs.insert(hs.begin() + at, bytes.begin(), bytes.end());
  auto grown = bytes.size() - count;  // modulo 2^64: adding it shrinks when negative
  set16(hs, layout.extensions, get16(hs, layout.extensions) + grown);
  set24(hs, 1, hs.size() - 4);
  return hs;
}

// `hs` with this server_name extension body instead of its own.
Bytes with_server_name_body(const Bytes& hs, const Bytes& body) {
  auto layout = layout_of(hs);
  REQUIRE(layout.server_name != 0);
  Bytes extension{0, 0, 0, 0};
  set16(extension, 2, body.size());
  extension.insert(extension.end(), body.begin(), body.end());
  return spliced(hs, layout.server_name, layout.server_name_size, extension);
}

// A server_name body listing these (name type, name) entries.
Bytes server_name_body(const std::vector<std::pair<unsigned char, std::string>>& names) {
  Bytes list;
  for (const auto& [type, name] : names) {
    list.push_back(type);
    list.push_back(0);
    list.push_back(0);
    set16(list, list.size() - 2, name.size());
    list.insert(list.end(), name.begin(), name.end());
  }
  Bytes body{0, 0};
  set16(body, 0, list.size());
  body.insert(body.end(), list.begin(), list.end());
  return body;
}

}  // namespace

TEST_CASE("a real ClientHello yields its server name", "[unit][egress][tls]") {
  auto bytes = real_client_hello("pypi.org");
  auto hello = parse_client_hello(bytes);
  CHECK(hello.state == ClientHello::State::complete);
  CHECK(hello.server_name == "pypi.org");
  // Whatever follows the ClientHello is not read.
  auto followed = bytes;
  for (char c : std::string("GET / HTTP/1.1\r\n"))
    followed.push_back(static_cast<unsigned char>(c));
  CHECK(parse_client_hello(followed).server_name == "pypi.org");
  // Case and a trailing dot as a client wrote them are normalised.
  CHECK(parse_client_hello(real_client_hello("Files.PythonHosted.org.")).server_name ==
        "files.pythonhosted.org");
}

TEST_CASE("a real ClientHello without SNI is complete without a name", "[unit][egress][tls]") {
  auto hello = parse_client_hello(real_client_hello(nullptr));
  CHECK(hello.state == ClientHello::State::complete);
  CHECK_FALSE(hello.server_name);
}

TEST_CASE("a real ClientHello with a 253-character name", "[unit][egress][tls]") {
  std::string label(63, 'x');
  std::string name = label + "." + label + "." + label + "." + std::string(61, 'y');
  auto hello = parse_client_hello(real_client_hello(name.c_str()));
  CHECK(hello.state == ClientHello::State::complete);
  CHECK(hello.server_name == name);
}

TEST_CASE("every strict prefix of a ClientHello is incomplete", "[unit][egress][tls]") {
  for (const char* name : {"pypi.org", static_cast<const char*>(nullptr)}) {
    auto bytes = real_client_hello(name);
    for (std::size_t n = 0; n < bytes.size(); ++n) {
      INFO("prefix of " << n << " bytes of " << bytes.size());
      REQUIRE(state_of(Bytes(bytes.begin(), bytes.begin() + n)) == ClientHello::State::incomplete);
    }
  }
}

TEST_CASE("a ClientHello fragmented over several records is reassembled", "[unit][egress][tls]") {
  auto hs = handshake_of(real_client_hello("pypi.org"));
  // Two records, split in the middle; one record per byte; the 4-byte header split.
  for (std::size_t fragment : {hs.size() / 2 + 1, std::size_t{1}, std::size_t{3}}) {
    INFO("fragments of " << fragment);
    auto records = framed(hs, fragment);
    auto hello = parse_client_hello(records);
    CHECK(hello.state == ClientHello::State::complete);
    CHECK(hello.server_name == "pypi.org");
    for (std::size_t n = 0; n < records.size(); ++n)
      REQUIRE(state_of(Bytes(records.begin(), records.begin() + n)) ==
              ClientHello::State::incomplete);
  }
  // The records need not end where the ClientHello does.
  auto two = framed(hs, hs.size() / 2 + 1);
  two.insert(two.end(), {22, 3, 3, 0, 1, 20});
  CHECK(parse_client_hello(two).server_name == "pypi.org");
}

TEST_CASE("what is not a TLS handshake record is not_tls at once", "[unit][egress][tls]") {
  auto not_tls = [](Bytes bytes) { return state_of(bytes) == ClientHello::State::not_tls; };
  std::string request = "GET / HTTP/1.1\r\n";
  CHECK(not_tls(Bytes(request.begin(), request.end())));
  CHECK(not_tls(Bytes{'G'}));
  auto record = real_client_hello("pypi.org");
  auto with = [&](std::size_t at, unsigned char value) {
    auto copy = record;
    copy[at] = value;
    return copy;
  };
  CHECK(not_tls(with(0, 23)));                  // application data
  CHECK(not_tls(with(0, 21)));                  // alert
  CHECK(not_tls(with(0, 0x80)));                // an SSLv2-style hello
  CHECK(not_tls(with(1, 2)));                   // version major
  CHECK(not_tls(Bytes{22, 2}));                 // from the second byte on
  CHECK(not_tls(with(5, 2)));                   // a ServerHello, not a ClientHello
  CHECK(not_tls(Bytes{22, 3, 1, 0, 0}));        // an empty record
  CHECK(not_tls(Bytes{22, 3, 1, 0x48, 0x01}));  // longer than a record may be
  CHECK(state_of(Bytes{22, 3, 1, 0x48, 0x00}) == ClientHello::State::incomplete);
  // A ClientHello declared longer than the cap is refused from its header.
  Bytes huge{22, 3, 1, 0, 4, 1, 0, 0, 0};
  set24(huge, 6, kMaxClientHelloBytes - 3);
  CHECK(not_tls(huge));
  set24(huge, 6, kMaxClientHelloBytes - 4);
  CHECK(state_of(huge) == ClientHello::State::incomplete);
  // A record of another type in the middle of the handshake.
  auto hs = handshake_of(record);
  auto split = framed(hs, hs.size() / 2 + 1);
  split[5 + hs.size() / 2 + 1] = 20;  // the second record's type: change_cipher_spec
  CHECK(not_tls(split));
}

TEST_CASE("a ClientHello whose lengths disagree is not_tls", "[unit][egress][tls]") {
  auto hs = handshake_of(real_client_hello("pypi.org"));
  auto layout = layout_of(hs);
  REQUIRE(layout.server_name != 0);
  auto not_tls = [](const Bytes& handshake) {
    return state_of(framed(handshake)) == ClientHello::State::not_tls;
  };
  auto add16 = [&](std::size_t at, int delta) {
    auto copy = hs;
    set16(copy, at, get16(copy, at) + static_cast<std::size_t>(delta));
    return copy;
  };
  CHECK(not_tls(add16(layout.extensions, 1)));
  CHECK(not_tls(add16(layout.extensions, -1)));
  CHECK(not_tls(add16(layout.server_name + 2, 1)));  // the extension's length
  CHECK(not_tls(add16(layout.server_name + 2, -1)));
  CHECK(not_tls(add16(layout.server_name + 4, 1)));  // the server_name list's length
  CHECK(not_tls(add16(layout.server_name + 4, -1)));
  CHECK(not_tls(add16(layout.server_name + 7, 1)));  // the host_name's length
  CHECK(not_tls(add16(layout.server_name + 7, -1)));
  CHECK(not_tls(add16(layout.cipher_suites, 1)));  // odd
  CHECK(not_tls(add16(layout.cipher_suites, 2)));
  auto long_session = hs;
  long_session[layout.session_id] = 33;
  CHECK(not_tls(long_session));
  // The handshake message one byte longer than its ClientHello (a stray byte after the
  // extensions), or one shorter.
  auto longer = hs;
  longer.push_back(0);
  set24(longer, 1, longer.size() - 4);
  CHECK(not_tls(longer));
  auto shorter = hs;
  shorter.pop_back();
  set24(shorter, 1, shorter.size() - 4);
  CHECK(not_tls(shorter));
  // Without the extensions block it is complete (TLS 1.2 allows that); with a lone byte of one,
  // not.
  auto bare = hs;
  bare.resize(layout.extensions);
  set24(bare, 1, bare.size() - 4);
  CHECK(parse_client_hello(framed(bare)).state == ClientHello::State::complete);
  CHECK_FALSE(parse_client_hello(framed(bare)).server_name);
  bare.push_back(0);
  set24(bare, 1, bare.size() - 4);
  CHECK(not_tls(bare));
  // Too short to hold even the fixed fields.
  Bytes tiny{1, 0, 0, 2, 3, 3};
  CHECK(not_tls(tiny));
}

TEST_CASE("a server_name extension must hold one printable host_name", "[unit][egress][tls]") {
  auto hs = handshake_of(real_client_hello("pypi.org"));
  auto layout = layout_of(hs);
  auto state = [](const Bytes& handshake) { return parse_client_hello(framed(handshake)).state; };
  auto name_of = [](const Bytes& handshake) {
    return parse_client_hello(framed(handshake)).server_name;
  };
  // The helpers rebuild what OpenSSL wrote.
  REQUIRE(name_of(with_server_name_body(hs, server_name_body({{0, "pypi.org"}}))) == "pypi.org");
  CHECK(name_of(with_server_name_body(hs, server_name_body({{0, std::string(255, 'a')}}))) ==
        std::string(255, 'a'));
  const std::vector<Bytes> bad{
      server_name_body({}),
      server_name_body({{0, "pypi.org"}, {0, "evil.example"}}),
      server_name_body({{1, "pypi.org"}}),
      server_name_body({{0, "pypi.org"}, {1, "x"}}),
      server_name_body({{0, ""}}),
      server_name_body({{0, "."}}),
      server_name_body({{0, std::string(256, 'a')}}),
      server_name_body({{0, "pypi.org\x7f"}}),
      server_name_body({{0, "pypi org"}}),
      server_name_body({{0, std::string("pypi\0org", 8)}}),
      server_name_body({{0, "caf\xC3\xA9.example"}}),
      Bytes{},
  };
  for (std::size_t i = 0; i < bad.size(); ++i) {
    INFO("case " << i);
    CHECK(state(with_server_name_body(hs, bad[i])) == ClientHello::State::not_tls);
  }
  // Two server_name extensions, even with the same name.
  Bytes extension(hs.begin() + layout.server_name,
                  hs.begin() + layout.server_name + layout.server_name_size);
  CHECK(state(spliced(hs, layout.server_name, 0, extension)) == ClientHello::State::not_tls);
  auto end = layout.extensions + 2 + get16(hs, layout.extensions);
  CHECK(state(spliced(hs, end, 0, extension)) == ClientHello::State::not_tls);
  // Other extensions may repeat: not this parser's business.
  Bytes unknown{0xfa, 0xfa, 0, 1, 0};
  CHECK(name_of(spliced(spliced(hs, end, 0, unknown), end, 0, unknown)) == "pypi.org");
}

TEST_CASE("a ClientHello over several records up to the cap is read", "[unit][egress][tls]") {
  // A padding extension grows the ClientHello to exactly the cap, over records of 16 KiB.
  auto hs = handshake_of(real_client_hello("pypi.org"));
  auto layout = layout_of(hs);
  auto end = layout.extensions + 2 + get16(hs, layout.extensions);
  auto padded = [&](std::size_t total) {
    std::size_t pad = total - hs.size() - 4;
    Bytes padding{0, 21, 0, 0};
    set16(padding, 2, pad);
    padding.resize(4 + pad, 0);
    return spliced(hs, end, 0, padding);
  };
  auto at_cap = padded(kMaxClientHelloBytes);
  REQUIRE(at_cap.size() == kMaxClientHelloBytes);
  auto hello = parse_client_hello(framed(at_cap));
  CHECK(hello.state == ClientHello::State::complete);
  CHECK(hello.server_name == "pypi.org");
  // One byte more is refused as soon as its header is read.
  auto over = framed(padded(kMaxClientHelloBytes + 1));
  CHECK(state_of(over) == ClientHello::State::not_tls);
  CHECK(state_of(Bytes(over.begin(), over.begin() + 9)) == ClientHello::State::not_tls);
}

TEST_CASE("a tenant holds at most its share of the gateway's egress connections",
          "[unit][egress]") {
  sandgate::egress::ConnectionShares shares(5, 2);
  CHECK(shares.take("alice").empty());
  CHECK(shares.take("alice").empty());
  CHECK(shares.take("alice") ==
        "this tenant already has its share of the gateway's egress connections (2) open");
  CHECK(shares.open_for("alice") == 2);
  CHECK(shares.take("bob").empty());
  CHECK(shares.take("bob").empty());
  CHECK(shares.take("carol").empty());
  // The gateway's 5 are all held: a tenant under its share is told that instead.
  CHECK(shares.take("dave") == "the gateway's egress connections are all in use; try again soon");
  shares.give_back("alice");
  CHECK(shares.take("dave").empty());
  CHECK(shares.open() == 5);
  // A place is given back when its holder goes; an unknown tenant's give_back changes nothing.
  { sandgate::egress::SharePlace place(shares, "dave"); }
  CHECK(shares.open_for("dave") == 0);
  shares.give_back("nobody");
  CHECK(shares.open() == 4);
}
