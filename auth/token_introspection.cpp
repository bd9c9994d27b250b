#include "auth/token_introspection.hpp"

#include "common/base64.hpp"
#include "common/bounded_json.hpp"
#include "common/percent_encode.hpp"

namespace sandgate::auth {
namespace asio = boost::asio;

namespace {
// An introspection answer is a small object; anything larger is not one.
constexpr std::size_t kMaxAnswerBytes = 64 * 1024;
}  // namespace

TokenIntrospection::TokenIntrospection(std::string url, std::string client_id,
                                       std::string client_secret, HttpsFetcher& fetcher)
    : url_(std::move(url)),
      basic_credentials_("Basic " + base64_encode(percent_encode(client_id) + ":" +
                                                  percent_encode(client_secret))),
      fetcher_(fetcher) {}

asio::awaitable<Introspection> TokenIntrospection::introspect(std::string token,
                                                              asio::any_io_executor executor) {
  Introspection out;
  FetchRequest request{url_, "token=" + percent_encode(token) + "&token_type_hint=access_token",
                       basic_credentials_};
  FetchLimits limits;
  limits.max_body_bytes = kMaxAnswerBytes;
  limits.max_redirects = 0;  // the token travels in the body: it goes where it was sent, only
  auto got = co_await fetcher_.fetch(executor, std::move(request), limits);
  if (!got.ok()) {
    out.problem = "introspection: " + got.problem;
    co_return out;
  }
  auto parsed = parse_bounded_json(got.body, 16);
  if (parsed.fault != JsonFault::none || !parsed.value.is_object()) {
    out.problem = "introspection: the answer is not a JSON object";
    co_return out;
  }
  out.answered = true;
  // RFC 7662 §2.2: `active` is a boolean; anything but true is an inactive token.
  auto active = parsed.value.find("active");
  out.active = active != parsed.value.end() && active->is_boolean() && active->get<bool>();
  if (out.active) out.claims = std::move(parsed.value);
  co_return out;
}

}  // namespace sandgate::auth
