#pragma once
// The URLs the gateway itself fetches or names as an OAuth resource server (issuers, their
// metadata and key sets, the introspection endpoint, --resource-url): https, or plain http only
// when the host is loopback (a test's authorization server). No user info, no fragment.
#include <optional>
#include <string>
#include <string_view>

namespace sandgate::auth {

struct HttpUrl {
  bool tls = true;
  std::string host;    // without brackets for IPv6
  std::string port;    // always set ("443", "80" or the URL's own)
  std::string target;  // path and query, at least "/"
  std::string path;    // path alone, "" for the root ("https://a.example" and ".../" alike)

  // scheme://host[:port], the port only when it is not the scheme's own.
  std::string origin() const;
};

// nullopt with `problem` set (a sentence for a start-up error, never echoing the URL's query).
std::optional<HttpUrl> parse_http_url(std::string_view url, std::string& problem);

}  // namespace sandgate::auth
