#include "auth/http_url.hpp"

#include <algorithm>
#include <boost/asio/ip/address_v6.hpp>

#include "common/loopback.hpp"

namespace sandgate::auth {
namespace {

bool is_host_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '.';
}

bool is_digits(std::string_view s) {
  return !s.empty() && s.size() <= 5 &&
         std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// Printable ASCII without space: a URL with anything else is refused, not escaped.
bool is_url_char(char c) {
  return c > 0x20 && c < 0x7f;
}

}  // namespace

std::string HttpUrl::origin() const {
  std::string out = tls ? "https://" : "http://";
  out += host.find(':') != std::string::npos ? "[" + host + "]" : host;
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
  std::string_view host = authority, port;
  if (!authority.empty() && authority.front() == '[') {
    auto close = authority.find(']');
    if (close == std::string_view::npos) {
      problem = "an IPv6 host needs its closing ']'";
      return std::nullopt;
    }
    host = authority.substr(1, close - 1);
    boost::system::error_code not_v6;
    boost::asio::ip::make_address_v6(std::string(host), not_v6);
    if (not_v6) {
      problem = "the host in brackets must be an IPv6 address";
      return std::nullopt;
    }
    std::string_view after = authority.substr(close + 1);
    if (!after.empty()) {
      if (after.front() != ':') {
        problem = "expected a port after the IPv6 host";
        return std::nullopt;
      }
      port = after.substr(1);
    }
  } else if (auto colon = authority.rfind(':'); colon != std::string_view::npos) {
    host = authority.substr(0, colon);
    port = authority.substr(colon + 1);
    if (!std::all_of(host.begin(), host.end(), is_host_char)) {
      problem = "the host must be a DNS name or an IP address";
      return std::nullopt;
    }
  } else if (!std::all_of(host.begin(), host.end(), is_host_char)) {
    problem = "the host must be a DNS name or an IP address";
    return std::nullopt;
  }
  if (host.empty()) {
    problem = "the URL has no host";
    return std::nullopt;
  }
  if (!port.empty() && (!is_digits(port) || std::stoul(std::string(port)) == 0 ||
                        std::stoul(std::string(port)) > 65535)) {
    problem = "the port must be a number from 1 to 65535";
    return std::nullopt;
  }
  out.host = std::string(host);
  out.port = port.empty() ? (out.tls ? "443" : "80") : std::string(port);
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
