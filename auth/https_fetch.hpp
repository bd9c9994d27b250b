#pragma once
// The gateway's own outbound requests, to an authorization server: its metadata, its key set,
// its introspection endpoint. Everything that comes back is hostile input, so every request
// has deadlines (connect, whole exchange), a response-size limit, certificate and host-name
// verification (the system's trust store, or --oauth-ca-file), and no redirect to another
// origin. Plain http only to loopback (http_url.hpp).
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/ssl/context.hpp>
#include <chrono>
#include <cstddef>
#include <string>

namespace sandgate::auth {

struct FetchRequest {
  std::string url;
  std::string form_body;      // set: a POST of application/x-www-form-urlencoded
  std::string authorization;  // an Authorization header value, or empty
};

struct FetchLimits {
  std::size_t max_body_bytes = 256 * 1024;
  std::chrono::milliseconds connect_timeout{3000};
  std::chrono::milliseconds total_timeout{5000};  // resolve, connect, TLS, request, response
  int max_redirects = 3;                          // each to the same origin only
};

struct FetchResult {
  int status = 0;  // 0: no HTTP answer at all
  std::string body;
  // Empty on a 2xx answer; else a short phrase for logs ("timeout", "certificate", "status 503",
  // "too large", "redirect to another origin" …). Never the body, never a header's value.
  std::string problem;
  bool ok() const { return problem.empty(); }
};

class HttpsFetcher {
 public:
  // `ca_file` empty: the system's trust store. Throws std::runtime_error if it cannot be read.
  explicit HttpsFetcher(const std::string& ca_file);
  HttpsFetcher(const HttpsFetcher&) = delete;
  HttpsFetcher& operator=(const HttpsFetcher&) = delete;

  boost::asio::awaitable<FetchResult> fetch(boost::asio::any_io_executor executor,
                                            FetchRequest request, FetchLimits limits = {});

 private:
  boost::asio::ssl::context tls_;
};

}  // namespace sandgate::auth
