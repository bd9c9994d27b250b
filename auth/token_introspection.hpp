#pragma once
// RFC 7662 token introspection, for access tokens that are not JWTs (opaque tokens): the
// gateway asks the authorization server's introspection endpoint, authenticating as its own
// client (HTTP Basic, RFC 6749 §2.3.1), whether a token is active and what it says. The answer
// is then held to the same rules as a JWT's claims (access_token.hpp).
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "auth/https_fetch.hpp"

namespace sandgate::auth {

struct Introspection {
  bool answered = false;  // false: the endpoint could not be asked (problem says why)
  bool active = false;
  nlohmann::json claims;  // the answer, when active
  std::string problem;
};

class TokenIntrospection {
 public:
  TokenIntrospection(std::string url, std::string client_id, std::string client_secret,
                     HttpsFetcher& fetcher);

  boost::asio::awaitable<Introspection> introspect(std::string token,
                                                   boost::asio::any_io_executor executor);

 private:
  const std::string url_;
  // "Basic base64(id:secret)", each percent-encoded first (RFC 6749 §2.3.1, Appendix B).
  const std::string basic_credentials_;
  HttpsFetcher& fetcher_;
};

}  // namespace sandgate::auth
