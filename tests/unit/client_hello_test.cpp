// The server name a TLS ClientHello asks for (egress/client_hello), checked on real ClientHellos
// that OpenSSL writes and on ones altered here.
#include "egress/client_hello.hpp"

#include <openssl/ssl.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

using sandgate::egress::ClientHello;
using sandgate::egress::kMaxClientHelloBytes;
using sandgate::egress::parse_client_hello;

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
