#include "egress/client_hello.hpp"

#include <algorithm>
#include <cstdint>
#include <vector>

namespace sandgate::egress {

namespace {

using Bytes = std::span<const unsigned char>;
using State = ClientHello::State;

constexpr unsigned char kHandshakeRecord = 22;
constexpr unsigned char kClientHelloType = 1;
constexpr std::size_t kRecordHeader = 5;
constexpr std::size_t kHandshakeHeader = 4;
// 2^14 of plaintext, plus what RFC 8446 allows a record to grow by.
constexpr std::size_t kMaxRecordLength = 16384 + 2048;
constexpr std::uint16_t kServerNameExtension = 0;
constexpr unsigned char kHostNameType = 0;
constexpr std::size_t kMaxSessionId = 32;
constexpr std::size_t kMaxHostName = 255;

ClientHello not_tls() {
  return {State::not_tls, std::nullopt};
}
ClientHello incomplete() {
  return {State::incomplete, std::nullopt};
}

// Reads big-endian fields front to back; any read past the end marks the reader failed.
class Reader {
 public:
  explicit Reader(Bytes bytes) : bytes_(bytes) {}

  bool failed() const { return failed_; }
  std::size_t remaining() const { return failed_ ? 0 : bytes_.size() - at_; }

  std::size_t number(std::size_t width) {
    if (remaining() < width) return fail();
    std::size_t value = 0;
    for (std::size_t i = 0; i < width; ++i) value = value << 8 | bytes_[at_++];
    return value;
  }
  // `length` bytes as a reader of their own.
  Reader take(std::size_t length) {
    if (failed_ || remaining() < length) {
      fail();
      return Reader(Bytes{}, true);
    }
    Reader part(bytes_.subspan(at_, length));
    at_ += length;
    return part;
  }
  void skip(std::size_t length) { take(length); }
  // A field led by its length in `width` bytes.
  Reader vector(std::size_t width) { return take(number(width)); }
  Bytes rest() const { return failed_ ? Bytes{} : bytes_.subspan(at_); }

 private:
  Reader(Bytes bytes, bool failed) : bytes_(bytes), failed_(failed) {}
  std::size_t fail() {
    failed_ = true;
    return 0;
  }

  Bytes bytes_;
  std::size_t at_ = 0;
  bool failed_ = false;
};

// What the records so far hold: the handshake bytes, or not_tls when a header is wrong.
struct Reassembly {
  bool valid = true;
  std::vector<unsigned char> handshake;
};

// A record header's first bytes (up to 5) could start a handshake record.
bool valid_record_header(Bytes header) {
  if (header.size() >= 1 && header[0] != kHandshakeRecord) return false;
  if (header.size() >= 2 && header[1] != 3) return false;
  if (header.size() < kRecordHeader) return true;
  std::size_t length = std::size_t{header[3]} << 8 | header[4];
  return length > 0 && length <= kMaxRecordLength;
}

// The handshake message's length with its header (which must be there).
std::size_t handshake_length(const std::vector<unsigned char>& handshake) {
  return kHandshakeHeader +
         (std::size_t{handshake[1]} << 16 | std::size_t{handshake[2]} << 8 | handshake[3]);
}

// A handshake message's header so far could start a ClientHello of allowed size.
bool valid_handshake_header(const std::vector<unsigned char>& handshake) {
  if (handshake.size() >= 1 && handshake[0] != kClientHelloType) return false;
  return handshake.size() < kHandshakeHeader || handshake_length(handshake) <= kMaxClientHelloBytes;
}

bool handshake_complete(const std::vector<unsigned char>& handshake) {
  return handshake.size() >= kHandshakeHeader && handshake.size() >= handshake_length(handshake);
}

// Concatenates the records' fragments until the ClientHello is whole or the bytes run out.
Reassembly reassemble(Bytes bytes) {
  Reassembly result;
  while (!bytes.empty() && !handshake_complete(result.handshake)) {
    auto header = bytes.first(std::min(bytes.size(), kRecordHeader));
    if (!valid_record_header(header)) return {false, {}};
    if (header.size() < kRecordHeader) break;
    std::size_t length = std::size_t{header[3]} << 8 | header[4];
    auto fragment = bytes.subspan(kRecordHeader, std::min(length, bytes.size() - kRecordHeader));
    result.handshake.insert(result.handshake.end(), fragment.begin(), fragment.end());
    if (!valid_handshake_header(result.handshake)) return {false, {}};
    bytes = bytes.subspan(kRecordHeader + fragment.size());
  }
  return result;
}

char lower(unsigned char c) {
  return static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
}

// A server_name extension's body: exactly one host_name, printable ASCII, 1..255 bytes.
std::optional<std::string> parse_server_name(Reader extension) {
  auto list = extension.vector(2);
  if (extension.failed() || extension.remaining() != 0) return std::nullopt;
  auto type = list.number(1);
  auto name = list.vector(2);
  if (list.failed() || list.remaining() != 0 || type != kHostNameType) return std::nullopt;
  auto bytes = name.rest();
  if (bytes.empty() || bytes.size() > kMaxHostName) return std::nullopt;
  std::string text;
  for (unsigned char c : bytes) {
    if (c < 0x21 || c > 0x7e) return std::nullopt;
    text += lower(c);
  }
  if (text.back() == '.') text.pop_back();
  if (text.empty()) return std::nullopt;
  return text;
}

// The extensions block: each one's length within it, server_name at most once.
ClientHello parse_extensions(Reader extensions) {
  ClientHello hello{State::complete, std::nullopt};
  while (extensions.remaining() > 0) {
    auto type = extensions.number(2);
    auto body = extensions.vector(2);
    if (extensions.failed()) return not_tls();
    if (type != kServerNameExtension) continue;
    if (hello.server_name) return not_tls();
    hello.server_name = parse_server_name(body);
    if (!hello.server_name) return not_tls();
  }
  return hello;
}

// The ClientHello's body (after its 4-byte header), every length checked against what remains.
ClientHello parse_body(Reader body) {
  body.skip(2 + 32);  // legacy_version, random
  auto session_id = body.vector(1);
  auto cipher_suites = body.vector(2);
  auto compression = body.vector(1);
  if (body.failed() || session_id.remaining() > kMaxSessionId) return not_tls();
  auto suites = cipher_suites.remaining();
  if (suites < 2 || suites % 2 != 0 || compression.remaining() < 1) return not_tls();
  if (body.remaining() == 0) return {State::complete, std::nullopt};  // no extensions at all
  auto extensions = body.vector(2);
  if (body.failed() || body.remaining() != 0) return not_tls();
  return parse_extensions(extensions);
}

}  // namespace

ClientHello parse_client_hello(std::span<const unsigned char> bytes) {
  auto reassembly = reassemble(bytes);
  if (!reassembly.valid) return not_tls();
  if (!handshake_complete(reassembly.handshake)) return incomplete();
  auto message = Bytes(reassembly.handshake).first(handshake_length(reassembly.handshake));
  return parse_body(Reader(message.subspan(kHandshakeHeader)));
}

}  // namespace sandgate::egress
