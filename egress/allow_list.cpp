#include "egress/allow_list.hpp"

#include <arpa/inet.h>

#include <algorithm>
#include <stdexcept>
#include <string>
#include <utility>
#include <variant>

#include "common/host_port.hpp"
#include "egress/address_policy.hpp"

namespace sandgate::egress {

namespace {

namespace ip = boost::asio::ip;

constexpr std::size_t kMaxName = 253;
constexpr std::size_t kMaxLabel = 63;

bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.';
}

char lower(char c) {
  return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
}

bool all_digits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// Labels of 1..63 characters, at most 253 in all, only the characters a name may hold.
bool valid_name_syntax(std::string_view name) {
  if (name.empty() || name.size() > kMaxName) return false;
  if (!std::all_of(name.begin(), name.end(), is_name_char)) return false;
  std::size_t label = 0;
  for (char c : name) {
    if (c != '.') {
      if (++label > kMaxLabel) return false;
    } else if (std::exchange(label, 0) == 0) {
      return false;
    }
  }
  return label != 0;
}

// A name some resolver would read as an IPv4 address in another spelling ("2130706433",
// "0x7f.1", "127.1"): refused, as what it means depends on who resolves it.
bool numeric_lookalike(const std::string& name) {
  auto last_dot = name.rfind('.');
  auto last_label = last_dot == std::string::npos ? std::string_view(name)
                                                  : std::string_view(name).substr(last_dot + 1);
  if (all_digits(last_label)) return true;
  in_addr ignored{};
  return ::inet_aton(name.c_str(), &ignored) != 0;
}

// An IPv6 literal's text, without a zone ("%eth0": it names an interface of the gateway).
std::optional<ip::address_v6> parse_v6(std::string_view text) {
  if (text.find('%') != std::string_view::npos) return std::nullopt;
  boost::system::error_code ec;
  auto address = ip::make_address_v6(std::string(text), ec);
  if (ec) return std::nullopt;
  return address;
}

// Dotted-quad only (inet_pton underneath): no octal, hex or short forms.
std::optional<ip::address_v4> parse_v4(const std::string& text) {
  boost::system::error_code ec;
  auto address = ip::make_address_v4(text, ec);
  if (ec) return std::nullopt;
  return address;
}

// What a host names once normalised: its text, and its address when it is a literal.
struct Host {
  std::string text;
  std::optional<ip::address> literal;
};

std::optional<Host> classify_name(std::string_view host) {
  if (!host.empty() && host.back() == '.') host.remove_suffix(1);
  std::string name(host);
  std::transform(name.begin(), name.end(), name.begin(), lower);
  if (!valid_name_syntax(name)) return std::nullopt;
  if (auto v4 = parse_v4(name)) return Host{v4->to_string(), ip::address(*v4)};
  if (numeric_lookalike(name)) return std::nullopt;
  return Host{std::move(name), std::nullopt};
}

// A name, an IPv4 literal, or an IPv6 literal with or without brackets.
std::optional<Host> classify(std::string_view host) {
  bool bracketed = host.size() >= 2 && host.front() == '[' && host.back() == ']';
  if (!bracketed && host.find(':') == std::string_view::npos) return classify_name(host);
  auto v6 = parse_v6(bracketed ? host.substr(1, host.size() - 2) : host);
  if (!v6) return std::nullopt;
  return Host{v6->to_string(), ip::address(*v6)};
}

std::string_view trim(std::string_view s) {
  auto is_space = [](char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; };
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

[[noreturn]] void refuse(std::size_t position, const char* what) {
  throw std::invalid_argument("egress entry " + std::to_string(position) + ": " + what);
}

// An entry split into its host (an IPv6 literal without brackets) and port.
struct EntryParts {
  std::string_view host;
  std::optional<std::uint16_t> port;
};

EntryParts split_entry(std::string_view entry, std::size_t position) {
  // The allow-list's own spelling, as the tokens files in use write it: an IPv6 address without
  // brackets, and so without a port ("fd00::2"). classify() judges it.
  if (!entry.starts_with('[') && entry.find(':') != entry.rfind(':')) return {entry, std::nullopt};
  auto split = split_host_port(entry);
  if (auto* parts = std::get_if<HostPort>(&split)) return {parts->host, parts->port};
  switch (std::get<HostPortError>(split)) {
    case HostPortError::unclosed_bracket:
      refuse(position, "an unclosed '['");
    case HostPortError::after_bracket:
      refuse(position, "unexpected characters after ']'");
    case HostPortError::missing_port:
    case HostPortError::bad_port:
      refuse(position, "the port is not a number from 1 to 65535");
    case HostPortError::not_ipv6:
      refuse(position, "brackets must hold an IPv6 address (without a zone)");
    case HostPortError::empty_host:
    case HostPortError::bad_host:
      break;
  }
  refuse(position, "not a valid host name or IP address");
}

// Why `host` (which classify() refused) is not a host, as precisely as can be told.
const char* host_problem(std::string_view host) {
  auto last_colon = host.rfind(':');
  if (last_colon != std::string_view::npos && parse_v6(host.substr(0, last_colon)))
    return "an IPv6 address must be in brackets when a port follows";
  return "not a valid host name or IP address";
}

AllowedDestination parse_entry(std::string_view entry, std::size_t position) {
  if (entry.empty()) refuse(position, "empty");
  AllowedDestination destination;
  // The wildcard is the allow-list's, not part of a host: taken off before the split.
  if (entry.starts_with("*")) {
    if (!entry.starts_with("*.")) refuse(position, "a wildcard must be '*.' followed by a name");
    destination.wildcard = true;
    entry.remove_prefix(2);
  }
  auto [host, port] = split_entry(entry, position);
  destination.port = port;
  auto normalised = classify(host);
  if (!normalised) refuse(position, host_problem(host));
  if (destination.wildcard && normalised->literal)
    refuse(position, "a wildcard must be '*.' followed by a name");
  destination.host = std::move(normalised->text);
  destination.literal = normalised->literal;
  return destination;
}

std::string entry_text(const AllowedDestination& entry) {
  std::string text = entry.wildcard ? "*." : "";
  text += bracket_host(entry.host);
  if (entry.port) text += ":" + std::to_string(*entry.port);
  return text;
}

bool port_matches(const AllowedDestination& entry, std::uint16_t port, std::uint16_t default_port) {
  return entry.port ? *entry.port == port : port == default_port;
}

bool host_matches(const AllowedDestination& entry, const Host& host) {
  if (entry.literal || host.literal)
    return entry.literal && host.literal && unmapped(*entry.literal) == unmapped(*host.literal);
  if (!entry.wildcard) return host.text == entry.host;
  // Strictly below: "a.pypi.org" for "*.pypi.org", never "pypi.org" nor "evilpypi.org".
  return host.text.size() > entry.host.size() + 1 && host.text.ends_with(entry.host) &&
         host.text[host.text.size() - entry.host.size() - 1] == '.';
}

}  // namespace

AllowList AllowList::parse(std::string_view text) {
  AllowList list;
  std::size_t position = 1;
  for (std::size_t start = 0;; ++position) {
    auto comma = text.find(',', start);
    auto entry =
        trim(text.substr(start, comma == std::string_view::npos ? text.npos : comma - start));
    list.entries_.push_back(parse_entry(entry, position));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return list;
}

bool AllowList::allows(std::string_view host, std::uint16_t port,
                       std::uint16_t default_port) const {
  auto normalised = classify(host);
  if (!normalised) return false;
  return std::any_of(entries_.begin(), entries_.end(), [&](const AllowedDestination& entry) {
    return port_matches(entry, port, default_port) && host_matches(entry, *normalised);
  });
}

bool AllowList::names_literal(const ip::address& address, std::uint16_t port,
                              std::uint16_t default_port) const {
  auto wanted = unmapped(address);
  return std::any_of(entries_.begin(), entries_.end(), [&](const AllowedDestination& entry) {
    return entry.literal && unmapped(*entry.literal) == wanted &&
           port_matches(entry, port, default_port);
  });
}

std::string AllowList::to_text() const {
  std::string text;
  for (const auto& entry : entries_) {
    if (!text.empty()) text += ',';
    text += entry_text(entry);
  }
  return text;
}

std::optional<std::string> normalise_host(std::string_view host) {
  auto normalised = classify(host);
  if (!normalised) return std::nullopt;
  return std::move(normalised->text);
}

}  // namespace sandgate::egress
