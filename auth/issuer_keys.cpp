#include "auth/issuer_keys.hpp"

#include <algorithm>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/experimental/concurrent_channel.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "auth/http_url.hpp"
#include "common/bounded_json.hpp"

namespace sandgate::auth {
namespace asio = boost::asio;
using Clock = std::chrono::steady_clock;

namespace {
// Metadata documents are small; key sets hold a few keys (jwk_set.hpp bounds their number).
constexpr std::size_t kMaxMetadataBytes = 64 * 1024;
constexpr std::size_t kMaxJwksBytes = 256 * 1024;
constexpr int kMaxJsonDepth = 16;
// One refresh in all — up to three metadata places, then the key set — ends by then: a request
// waiting on it waits no longer.
constexpr auto kFetchDeadline = std::chrono::seconds(8);

FetchLimits limits_until(Clock::time_point deadline, std::size_t max_body_bytes) {
  FetchLimits limits;
  limits.max_body_bytes = max_body_bytes;
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  limits.total_timeout = std::clamp(left, std::chrono::milliseconds(1), limits.total_timeout);
  limits.connect_timeout = std::min(limits.connect_timeout, limits.total_timeout);
  return limits;
}
}  // namespace

// Closed when the fetch under way ends: everyone waiting on it wakes.
struct IssuerKeys::Waiters {
  explicit Waiters(asio::any_io_executor executor) : done(executor) {}
  asio::experimental::concurrent_channel<void(boost::system::error_code)> done;
};

std::vector<std::string> metadata_urls(const std::string& issuer) {
  std::string problem;
  auto url = parse_http_url(issuer, problem);
  if (!url) return {};
  std::string origin = url->origin();
  // RFC 8414 §3.1: the issuer's terminating "/" goes before the path is inserted.
  std::string path = url->path;
  while (!path.empty() && path.back() == '/') path.pop_back();
  std::vector<std::string> urls = {origin + "/.well-known/oauth-authorization-server" + path,
                                   origin + "/.well-known/openid-configuration" + path};
  // Without a path, OpenID's two forms are the same URL: asked once.
  if (!path.empty()) urls.push_back(origin + path + "/.well-known/openid-configuration");
  return urls;
}

IssuerKeys::IssuerKeys(std::string issuer, HttpsFetcher& fetcher, RefreshObserver observer)
    : issuer_(std::move(issuer)),
      fetcher_(fetcher),
      observer_(std::move(observer)),
      keys_(std::make_shared<const JwkSet>()) {}

std::shared_ptr<const JwkSet> IssuerKeys::current() const {
  std::lock_guard lock(mutex_);
  return keys_;
}

bool IssuerKeys::stale() const {
  std::lock_guard lock(mutex_);
  return !keys_->keys.empty() && Clock::now() - fetched_at_ > kMaxKeyAge && !in_flight_ &&
         Clock::now() - attempted_at_ > kMinRefetchInterval;
}

void IssuerKeys::refresh_in_background(asio::any_io_executor executor) {
  asio::co_spawn(
      executor, [this, executor]() -> asio::awaitable<void> { co_await refresh(executor, false); },
      asio::detached);
}

asio::awaitable<IssuerKeys::Refreshed> IssuerKeys::refresh_for_unknown_key(
    asio::any_io_executor executor) {
  co_return co_await refresh(executor, true);
}

asio::awaitable<IssuerKeys::Refreshed> IssuerKeys::refresh(asio::any_io_executor executor,
                                                           bool on_demand) {
  std::shared_ptr<Waiters> waiters;
  bool mine = false;
  {
    std::lock_guard lock(mutex_);
    if (in_flight_) {
      if (!on_demand) co_return snapshot_locked(false);
      waiters = in_flight_;
    } else if (on_demand && on_demand_before_ &&
               Clock::now() - on_demand_at_ < kMinRefetchInterval) {
      co_return snapshot_locked(false);
    } else {
      if (on_demand) {
        on_demand_before_ = true;
        on_demand_at_ = Clock::now();
      }
      in_flight_ = waiters = std::make_shared<Waiters>(executor);
      mine = true;
    }
  }
  if (!mine) {
    // Wakes with an error when the channel closes; nothing is ever sent on it.
    co_await waiters->done.async_receive(asio::as_tuple(asio::use_awaitable));
    co_return snapshot(true);
  }
  // However this fetch ends — done, thrown, or its frame destroyed with the io_context at exit
  // (while the channel's service still exists) — the next one may start and the waiters wake.
  struct EndOfFetch {
    IssuerKeys& keys;
    std::shared_ptr<Waiters> waiters;
    ~EndOfFetch() {
      {
        std::lock_guard lock(keys.mutex_);
        keys.attempted_at_ = Clock::now();
        keys.in_flight_.reset();
      }
      waiters->done.close();
    }
  } end_of_fetch{*this, waiters};
  try {
    co_await fetch_keys(executor);
  } catch (const std::exception&) {
    std::lock_guard lock(mutex_);
    last_fetch_failed_ = true;
    observer_(issuer_, false, "internal error", keys_->keys.size());
  }
  co_return snapshot(true);
}

asio::awaitable<std::string> IssuerKeys::discover_jwks_uri(asio::any_io_executor executor,
                                                           Clock::time_point deadline,
                                                           std::string& problem) {
  problem = "metadata: no metadata document found";
  for (const auto& url : metadata_urls(issuer_)) {
    // Named, not braced into the call: g++ 12 destroys a braced temporary argument of a
    // coroutine twice.
    FetchRequest request{url, {}, {}};
    auto got = co_await fetcher_.fetch(executor, std::move(request),
                                       limits_until(deadline, kMaxMetadataBytes));
    if (!got.ok()) {
      // Only "not there" moves on to the next place; anything else is the answer.
      if (got.status == 404 || got.status == 410) continue;
      problem = "metadata: " + got.problem;
      co_return "";
    }
    auto parsed = parse_bounded_json(got.body, kMaxJsonDepth);
    const auto& doc = parsed.value;
    if (parsed.fault != JsonFault::none || !doc.is_object()) {
      problem = "metadata: not a JSON object";
      co_return "";
    }
    // RFC 8414 §3.3: metadata that names another issuer is not this issuer's.
    auto issuer = doc.find("issuer");
    if (issuer == doc.end() || !issuer->is_string() || *issuer != issuer_) {
      problem = "metadata: its issuer is not the one configured";
      co_return "";
    }
    auto jwks = doc.find("jwks_uri");
    std::string url_problem;
    auto jwks_url = jwks != doc.end() && jwks->is_string()
                        ? parse_http_url(jwks->get<std::string>(), url_problem)
                        : std::nullopt;
    auto issuer_url = parse_http_url(issuer_, url_problem);
    // Keys come over https; plain http only from an issuer that is itself on loopback (a test's).
    if (!jwks_url || !issuer_url || (!jwks_url->tls && issuer_url->tls)) {
      problem = "metadata: no usable jwks_uri (https, or http on loopback for a loopback issuer)";
      co_return "";
    }
    problem.clear();
    co_return jwks->get<std::string>();
  }
  co_return "";
}

IssuerKeys::Refreshed IssuerKeys::snapshot_locked(bool asked) const {
  return Refreshed{keys_, asked, last_fetch_failed_, keys_as_of_};
}

IssuerKeys::Refreshed IssuerKeys::snapshot(bool asked) const {
  std::lock_guard lock(mutex_);
  return snapshot_locked(asked);
}

asio::awaitable<void> IssuerKeys::fetch_keys(asio::any_io_executor executor) {
  const auto deadline = Clock::now() + kFetchDeadline;
  const auto began = std::chrono::system_clock::now();
  std::string jwks_uri;
  {
    std::lock_guard lock(mutex_);
    jwks_uri = jwks_uri_;
  }
  auto fail = [&](const std::string& problem) {
    std::lock_guard lock(mutex_);
    jwks_uri_ = jwks_uri;
    last_fetch_failed_ = true;
    observer_(issuer_, false, problem, keys_->keys.size());
  };
  std::string problem;
  if (jwks_uri.empty()) {
    jwks_uri = co_await discover_jwks_uri(executor, deadline, problem);
    if (jwks_uri.empty()) {
      fail(problem);
      co_return;
    }
  }
  FetchRequest request{jwks_uri, {}, {}};
  auto got =
      co_await fetcher_.fetch(executor, std::move(request), limits_until(deadline, kMaxJwksBytes));
  if (!got.ok()) {
    // The key set moved or went: find it through the metadata again next time.
    if (got.status == 404 || got.status == 410) jwks_uri.clear();
    fail("jwks: " + got.problem);
    co_return;
  }
  auto set = std::make_shared<JwkSet>(parse_jwk_set(got.body, problem));
  if (!problem.empty()) {
    fail("jwks: " + problem);
    co_return;
  }
  // A set the issuer publishes replaces the one known, even with no key this gateway can use:
  // an issuer that withdraws a compromised key must not leave it trusted here.
  std::lock_guard lock(mutex_);
  jwks_uri_ = jwks_uri;
  keys_ = std::move(set);
  fetched_at_ = Clock::now();
  keys_as_of_ = began;
  last_fetch_failed_ = false;
  observer_(issuer_, true, keys_->keys.empty() ? "jwks: no usable key" : "", keys_->keys.size());
}

}  // namespace sandgate::auth
