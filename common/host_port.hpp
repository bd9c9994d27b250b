#pragma once
// The one reading of `host[:port]` and of a port number, for every place that takes them apart:
// the Host and Origin checks, the OAuth URLs the gateway fetches, the tenants' egress allow-list
// entries, the egress proxy's CONNECT and absolute-form targets, the address the gateway listens
// on and the replicas' peer URLs. Several readers with rules of
// their own let a text mean one thing to the check and another to the code that acts on it, so
// there is one, as strict as the strictest of them was:
//   - host: a name or IPv4 literal of letters, digits, '-', '.' and '_' only (so never user
//     information, a path, spaces or control characters), or an IPv6 literal in brackets without
//     a zone. Not empty. Case and a trailing dot are kept as written: folding them is the
//     caller's business, as is whether the name is a valid DNS name.
//   - port: after one ':', 1 to 65535 in plain decimal digits (no sign, no spaces, no leading
//     zero), so each port has one spelling.
// An unbracketed host with a ':' in it is refused: "fd00::1:443" cannot be told from a port.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

namespace sandgate {

struct HostPort {
  std::string_view host;              // as written, without the brackets of an IPv6 literal
  bool ipv6 = false;                  // the host was an IPv6 literal in brackets
  std::optional<std::uint16_t> port;  // nullopt: none written (the caller's default applies)
};

// Why a text is not host[:port], so that each caller can say it in its own words.
enum class HostPortError {
  empty_host,        // "", ":80"
  bad_host,          // a character a host may not hold, or an unbracketed ':' too many
  unclosed_bracket,  // "[::1"
  not_ipv6,          // "[10.0.0.1]", "[fe80::1%eth0]"
  after_bracket,     // "[::1]x": only ":port" may follow the ']'
  missing_port,      // "host:", "[::1]:"
  bad_port,          // "host:0", "host:65536", "host:+80", "host:080", "host:8o"
};

std::variant<HostPort, HostPortError> split_host_port(std::string_view text);

// An address to listen on, "host:port": the same host, a port that must be written (missing_port
// otherwise), and "0" allowed besides 1..65535 (the kernel then picks a free port).
std::variant<HostPort, HostPortError> split_listen_address(std::string_view text);

// "1".."65535" in decimal digits, without sign, spaces or leading zeros; nullopt otherwise.
std::optional<std::uint16_t> parse_port(std::string_view text);

// A host as it goes into an authority or URL: an IPv6 literal (it holds a ':') in brackets.
std::string bracket_host(std::string_view host);

}  // namespace sandgate
