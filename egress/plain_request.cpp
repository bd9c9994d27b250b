#include "egress/plain_request.hpp"

#include <boost/beast/core/string.hpp>
#include <string_view>
#include <vector>

namespace sandgate::egress {
namespace beast = boost::beast;
namespace http = beast::http;

namespace {

// Request headers that belong to one hop (RFC 9110 7.6.1) or to the proxy itself: never passed
// on. Host and Connection are written anew.
bool hop_by_hop(std::string_view name) {
  for (std::string_view h : {"host", "connection", "proxy-connection", "keep-alive",
                             "proxy-authorization", "proxy-authenticate", "te", "upgrade"})
    if (beast::iequals(name, h)) return true;
  return false;
}

// The header names the request's Connection header lists: hop-by-hop too (RFC 9110 7.6.1).
std::vector<std::string> connection_options(const http::request<http::empty_body>& request) {
  std::vector<std::string> names;
  for (const auto& field : request) {
    if (!beast::iequals(field.name_string(), "connection")) continue;
    std::string_view value = field.value();
    while (!value.empty()) {
      auto comma = value.find(',');
      std::string_view token = value.substr(0, comma);
      while (!token.empty() && (token.front() == ' ' || token.front() == '\t'))
        token.remove_prefix(1);
      while (!token.empty() && (token.back() == ' ' || token.back() == '\t'))
        token.remove_suffix(1);
      if (!token.empty()) names.emplace_back(token);
      value = comma == std::string_view::npos ? std::string_view() : value.substr(comma + 1);
    }
  }
  return names;
}

// Headers that frame or route the request: never hop-by-hop, whatever Connection says.
bool frames_or_routes(std::string_view name) {
  for (std::string_view h : {"content-length", "host", "transfer-encoding"})
    if (beast::iequals(name, h)) return true;
  return name.size() >= 6 && beast::iequals(name.substr(0, 6), "proxy-");
}

}  // namespace

std::string plain_request_refusal(const http::request<http::empty_body>& request) {
  if (request.find(http::field::transfer_encoding) != request.end())
    return "a request body with Transfer-Encoding is not proxied; send Content-Length";
  // The reason names no byte of the request: it goes into a status line and the log.
  for (const auto& option : connection_options(request))
    if (frames_or_routes(option))
      return "a Connection header naming Content-Length, Host, Transfer-Encoding or a Proxy- "
             "header is not proxied";
  return "";
}

std::string plain_request_head(const http::request<http::empty_body>& request,
                               const ProxyTarget& target, bool to_upstream_proxy,
                               const HeaderSecret* secret, bool keep_alive) {
  auto listed = connection_options(request);
  std::string head(request.method_string());
  head += ' ';
  head +=
      to_upstream_proxy ? "http://" + target.authority + target.origin_form : target.origin_form;
  head += " HTTP/1.1\r\n";
  for (const auto& field : request) {
    auto name = field.name_string();
    if (hop_by_hop(name)) continue;
    // The sandbox's own header of the secret's name never reaches the host.
    if (secret != nullptr && beast::iequals(name, secret->header)) continue;
    // Kept alive (a terminated connection): the relay answers Expect itself (relay_terminated).
    if (keep_alive && beast::iequals(name, "expect")) continue;
    bool named = false;
    for (const auto& option : listed) named = named || beast::iequals(name, option);
    if (named) continue;
    head.append(name).append(": ").append(field.value()).append("\r\n");
  }
  if (secret != nullptr)
    head.append(secret->header).append(": ").append(secret->value).append("\r\n");
  head += "Host: " + target.authority +
          (keep_alive ? "\r\nConnection: keep-alive\r\n\r\n" : "\r\nConnection: close\r\n\r\n");
  return head;
}

}  // namespace sandgate::egress
