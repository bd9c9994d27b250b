#include "auth/http_url.hpp"

#include <algorithm>
#include <string>
#include <variant>

#include "common/host_port.hpp"
#include "common/loopback.hpp"

namespace sandgate::auth {
namespace {

const char* authority_problem(HostPortError error) {
  switch (error) {
    case HostPortError::empty_host:
      return "the URL has no host";
    case HostPortError::unclosed_bracket:
      return "an IPv6 host needs its closing ']'";
    case HostPortError::not_ipv6:
      return "the host in brackets must be an IPv6 address";
    case HostPortError::after_bracket:
      return "expected a port after the IPv6 host";
    case HostPortError::missing_port:
    case HostPortError::bad_port:
      return "the port must be a number from 1 to 65535";
    case HostPortError::bad_host:
      break;
  }
  return "the host must be a DNS name or an IP address";
}

// Printable ASCII without space: a URL with anything else is refused, not escaped.
bool is_url_char(char c) {
  return c > 0x20 && c < 0x7f;
}

}  // namespace

std::string HttpUrl::origin() const {
  std::string out = tls ? "https://" : "http://";
  out += bracket_host(host);
  if (port != (tls ? "443" : "80")) out += ":" + port;
  return out;
}

std::optional<HttpUrl> parse_http_url(std::string_view url, std::string& problem) {
  HttpUrl out;
  if (!std::all_of(url.begin(), url.end(), is_url_char)) {
    problem = "a URL may hold only printable ASCII without spaces";
    return std::nullopt;
  }
  if (url.substr(0, 8) == "https://") {
    url.remove_prefix(8);
  } else if (url.substr(0, 7) == "http://") {
    out.tls = false;
    url.remove_prefix(7);
  } else {
    problem = "expected an https:// URL";
    return std::nullopt;
  }
  if (url.find('#') != std::string_view::npos) {
    problem = "a fragment (#) has no place in this URL";
    return std::nullopt;
  }
  auto slash = url.find_first_of("/?");
  std::string_view authority = url.substr(0, slash);
  std::string_view rest = slash == std::string_view::npos ? "" : url.substr(slash);
  if (authority.find('@') != std::string_view::npos) {
    problem = "user information (user@host) has no place in this URL";
    return std::nullopt;
  }
  auto split = split_host_port(authority);
  auto* parts = std::get_if<HostPort>(&split);
  if (parts == nullptr) {
    problem = authority_problem(std::get<HostPortError>(split));
    return std::nullopt;
  }
  // A certificate cannot name a host with '_' (CA/Browser Forum), which host[:port] allows.
  if (parts->host.find('_') != std::string_view::npos) {
    problem = "the host must be a DNS name or an IP address";
    return std::nullopt;
  }
  out.host = std::string(parts->host);
  out.port = parts->port ? std::to_string(*parts->port) : (out.tls ? "443" : "80");
  if (!out.tls && !is_loopback_host(out.host)) {
    problem = "plain http is allowed only for a loopback host (127.0.0.1, ::1, localhost)";
    return std::nullopt;
  }
  out.target = rest.empty() || rest.front() == '?' ? "/" + std::string(rest) : std::string(rest);
  out.path = std::string(rest.substr(0, rest.find('?')));
  if (out.path == "/") out.path.clear();
  return out;
}

}  // namespace sandgate::auth
