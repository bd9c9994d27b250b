#pragma once
// One authorization server's signing keys, as this gateway knows them: found through its
// metadata (RFC 8414 `/.well-known/oauth-authorization-server`, else OpenID discovery), which
// must name this very issuer and give a `jwks_uri`; then the key set at that URI.
//
// The keys are kept across a failed fetch (an issuer that is down does not stop tokens signed
// by keys already known). A token naming a key not in the set asks for a refetch, and such
// refetches happen at most once per kMinRefetchInterval: a flood of made-up `kid`s costs one
// fetch, not one per token (the fetch at start and the refresh by age do not count, so a key
// published just after them is found at its first token). Keys older than kMaxKeyAge are
// refetched in the background while the old ones still serve, so a key the issuer withdrew
// stops being trusted within that age.
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "auth/https_fetch.hpp"
#include "auth/jwk_set.hpp"

namespace sandgate::auth {

constexpr std::chrono::seconds kMinRefetchInterval{10};
constexpr std::chrono::seconds kMaxKeyAge{15 * 60};

// What each fetch came to, for metrics and logs: "ok", or where it failed ("metadata", "jwks")
// and why (FetchResult::problem, or what the document lacked).
using RefreshObserver = std::function<void(const std::string& issuer, bool ok,
                                           const std::string& problem, std::size_t keys)>;

class IssuerKeys {
 public:
  IssuerKeys(std::string issuer, HttpsFetcher& fetcher, RefreshObserver observer);

  const std::string& issuer() const { return issuer_; }
  // The keys known now: empty before the first fetch succeeded.
  std::shared_ptr<const JwkSet> current() const;
  // Whether the keys are old enough to be fetched again (started with refresh_in_background).
  bool stale() const;
  // For a token naming a key not known: fetches the keys again unless such a fetch began less
  // than kMinRefetchInterval ago. Callers that come while any fetch is under way wait for it.
  // The keys known afterwards.
  // `asked`: false when the limit kept this call from fetching (the key may be new: the
  // caller should not call the token bad, only "try again shortly").
  struct Refreshed {
    std::shared_ptr<const JwkSet> keys;
    bool asked = false;
    bool failed = false;  // the last fetch failed (as of this answer, not a later one)
    // When the fetch that gave `keys` began: a token issued before then had its key published
    // before then, so that fetch would have found it.
    std::chrono::system_clock::time_point keys_as_of{};
  };
  boost::asio::awaitable<Refreshed> refresh_for_unknown_key(boost::asio::any_io_executor executor);
  // At start and by age: a fetch, unless one is under way; nobody waits for it.
  void refresh_in_background(boost::asio::any_io_executor executor);

 private:
  struct Waiters;
  boost::asio::awaitable<Refreshed> refresh(boost::asio::any_io_executor executor, bool on_demand);
  Refreshed snapshot_locked(bool asked) const;
  Refreshed snapshot(bool asked) const;
  boost::asio::awaitable<void> fetch_keys(boost::asio::any_io_executor executor);
  boost::asio::awaitable<std::string> discover_jwks_uri(
      boost::asio::any_io_executor executor, std::chrono::steady_clock::time_point deadline,
      std::string& problem);

  const std::string issuer_;
  HttpsFetcher& fetcher_;
  RefreshObserver observer_;

  mutable std::mutex mutex_;
  std::shared_ptr<const JwkSet> keys_;
  std::string jwks_uri_;                                  // from the metadata, once found
  std::chrono::steady_clock::time_point fetched_at_{};    // keys_ set at
  std::chrono::steady_clock::time_point attempted_at_{};  // the last fetch ended at
  std::chrono::steady_clock::time_point on_demand_at_{};  // the last unknown-key fetch began at
  bool on_demand_before_ = false;
  bool last_fetch_failed_ = false;
  std::chrono::system_clock::time_point keys_as_of_{};
  std::shared_ptr<Waiters> in_flight_;  // set while a fetch runs
};

// The URLs an issuer's metadata may be at, in the order tried (RFC 8414 §3.1 path insertion,
// OpenID Connect Discovery with the path inserted, then appended).
std::vector<std::string> metadata_urls(const std::string& issuer);

}  // namespace sandgate::auth
