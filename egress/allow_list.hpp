#pragma once
// A tenant's egress allow-list: the destinations its sandboxes may reach through the gateway's
// proxy. Written in the tokens file as
// `egress=pypi.org,files.pythonhosted.org,mirror.internal:8443`.
//
// An entry is `host[:port]`:
//   - host: a DNS name (case-insensitive, a trailing dot ignored), `*.name` for every name below
//     `name` (not `name` itself), an IPv4 literal, or an IPv6 literal in brackets ([fd00::1]:443).
//   - port: without one, an entry allows the scheme's default port only: 443 for a CONNECT
//     tunnel (TLS), 80 for a plain-HTTP request. With one, exactly that port, for both.
// An entry that is an IP literal also lets a listed name resolve to that address when it is
// private, loopback or link-local (address_policy.hpp): an internal mirror is reachable only when
// the operator names both it and its address.
#include <boost/asio/ip/address.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sandgate::egress {

struct AllowedDestination {
  std::string
      host;  // lower case, no trailing dot; for a literal its canonical text (IPv6 no brackets)
  bool wildcard = false;                            // `*.host`: any name strictly below host
  std::optional<boost::asio::ip::address> literal;  // set when host is an IP address
  std::optional<std::uint16_t> port;                // nullopt: the scheme's default
};

class AllowList {
 public:
  AllowList() = default;
  // Comma-separated entries (spaces around them ignored; empty entries refused). Throws
  // std::invalid_argument whose what() names the entry's position (1-based) and what is wrong,
  // never the entry's text: the tokens file's errors must not echo what was written.
  static AllowList parse(std::string_view text);

  bool empty() const { return entries_.empty(); }
  // Adds `more`'s entries (a tenant's secrets' destinations to its own list: issue #44).
  void add(const AllowList& more) {
    entries_.insert(entries_.end(), more.entries_.begin(), more.entries_.end());
  }
  const std::vector<AllowedDestination>& entries() const { return entries_; }

  // Whether a client may ask for `host`:`port`. `host` as a client wrote it in a CONNECT line or
  // a URL: a name (any case, optional trailing dot), an IPv4 literal, an IPv6 literal with or
  // without brackets. `default_port` is the scheme's (443 for CONNECT, 80 for plain HTTP).
  bool allows(std::string_view host, std::uint16_t port, std::uint16_t default_port) const;
  // Whether some entry names exactly this address, for this port (its own, or the scheme's
  // default without one), so that a listed name resolving to it may be connected to although it
  // is not public. An IPv4-mapped IPv6 address counts as its IPv4 address.
  bool names_literal(const boost::asio::ip::address& address, std::uint16_t port,
                     std::uint16_t default_port) const;

  // The entries, comma-separated, in canonical form (for docs, logs and tests).
  std::string to_text() const;

 private:
  std::vector<AllowedDestination> entries_;
};

// `host` as a client wrote it, normalised the way entries are (lower case, no trailing dot, IPv6
// without brackets); nullopt when it is not a syntactically valid DNS name or IP literal (empty,
// over 253 characters, a label over 63, characters other than letters, digits, '-', '_' and '.').
std::optional<std::string> normalise_host(std::string_view host);

}  // namespace sandgate::egress
