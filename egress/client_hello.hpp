#pragma once
// The server name (SNI) a TLS ClientHello asks for: the egress proxy checks that a CONNECT
// tunnel's TLS goes to the host the CONNECT named, without decrypting anything.
#include <cstddef>
#include <optional>
#include <span>
#include <string>

namespace sandgate::egress {

// A ClientHello longer than this (all its handshake records together) is refused.
inline constexpr std::size_t kMaxClientHelloBytes = 64 * 1024;

struct ClientHello {
  enum class State {
    incomplete,  // a valid prefix: read more bytes and ask again
    not_tls,     // not a TLS handshake record with a ClientHello (or malformed, or too long)
    complete,    // the whole ClientHello was parsed
  };
  State state = State::incomplete;
  // The host_name of the server_name extension (lower case, trailing dot removed), when
  // complete and present.
  std::optional<std::string> server_name;
};

// Parses the first bytes a client sent on a tunnel: one or more TLS records of content type 22
// (handshake) whose fragments together hold a ClientHello (handshake type 1). Every length is
// checked against what remains; an extension list with two server_name extensions, a
// server_name list with a name type other than host_name (0) or with two host_names, or a name
// with bytes outside printable ASCII is not_tls.
ClientHello parse_client_hello(std::span<const unsigned char> bytes);

}  // namespace sandgate::egress
