#include "common/host_port.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <algorithm>

namespace sandgate {
namespace {

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

bool is_host_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || is_digit(c) || c == '-' || c == '.' ||
         c == '_';
}

// inet_pton: the IPv6 text forms only, never a zone ("%eth0" names an interface of ours).
bool is_ipv6_literal(std::string_view text) {
  if (text.empty() || text.size() >= INET6_ADDRSTRLEN) return false;
  std::string copy(text);  // NUL-terminated; an embedded NUL makes it shorter, hence the check
  if (copy.find('\0') != std::string::npos) return false;
  in6_addr ignored{};
  return ::inet_pton(AF_INET6, copy.c_str(), &ignored) == 1;
}

// Which ports a text may name: a destination's, or a listening address's where 0 means "any".
enum class PortRule { destination, listening };

std::optional<std::uint16_t> port_under(PortRule rule, std::string_view text) {
  if (rule == PortRule::listening && text == "0") return std::uint16_t{0};
  return parse_port(text);
}

// The port after the host: "" (none), or ':' and the port.
std::variant<HostPort, HostPortError> with_port(HostPort out, std::string_view rest,
                                                PortRule rule) {
  if (rest.empty()) return out;
  if (rest.front() != ':') return HostPortError::after_bracket;
  rest.remove_prefix(1);
  if (rest.empty()) return HostPortError::missing_port;
  out.port = port_under(rule, rest);
  if (!out.port) return HostPortError::bad_port;
  return out;
}

std::variant<HostPort, HostPortError> split_under(PortRule rule, std::string_view text) {
  HostPort out;
  if (text.starts_with('[')) {
    auto close = text.find(']');
    if (close == std::string_view::npos) return HostPortError::unclosed_bracket;
    out.host = text.substr(1, close - 1);
    out.ipv6 = true;
    if (!is_ipv6_literal(out.host)) return HostPortError::not_ipv6;
    return with_port(out, text.substr(close + 1), rule);
  }
  auto colon = text.find(':');
  out.host = text.substr(0, colon);
  if (out.host.empty()) return HostPortError::empty_host;
  if (!std::all_of(out.host.begin(), out.host.end(), is_host_char)) return HostPortError::bad_host;
  if (colon == std::string_view::npos) return out;
  auto port = text.substr(colon + 1);
  if (port.find(':') != std::string_view::npos) return HostPortError::bad_host;
  return with_port(out, text.substr(colon), rule);
}

}  // namespace

std::optional<std::uint16_t> parse_port(std::string_view text) {
  // At most 5 digits, the first not 0: "0", "080" and "000443" all have another spelling.
  if (text.empty() || text.size() > 5 || text.front() == '0') return std::nullopt;
  if (!std::all_of(text.begin(), text.end(), is_digit)) return std::nullopt;
  unsigned value = 0;
  for (char c : text) value = value * 10 + static_cast<unsigned>(c - '0');
  if (value > 65535) return std::nullopt;
  return static_cast<std::uint16_t>(value);
}

std::variant<HostPort, HostPortError> split_host_port(std::string_view text) {
  return split_under(PortRule::destination, text);
}

std::variant<HostPort, HostPortError> split_listen_address(std::string_view text) {
  auto split = split_under(PortRule::listening, text);
  if (auto* parts = std::get_if<HostPort>(&split); parts && !parts->port)
    return HostPortError::missing_port;
  return split;
}

std::string bracket_host(std::string_view host) {
  if (host.find(':') == std::string_view::npos) return std::string(host);
  return "[" + std::string(host) + "]";
}

}  // namespace sandgate
