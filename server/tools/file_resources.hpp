#pragma once
// The resources execute mints for the files it returns (resource links for large ones, the
// URIs of embedded ones), and resources/read for them.
//
// A URI is sandgate://sandbox/<key>/work/<path>: <key> is 128 random bits naming one sandbox
// (never a session id, which is a credential of the 2025 era), and only URIs this gateway
// minted are served: not any path of that sandbox. A read goes through the sandbox (its
// transfer process, in turn with the session's calls), for the tenant that minted it only;
// another tenant, a sandbox that has ended and an unknown URI all get the same "Resource not
// found". The table is bounded per tenant (a tenant's oldest URIs go first, so no tenant can
// push out another's) and in all (entries of ended sandboxes go first, then the oldest of the
// tenant holding most).
#include <algorithm>
#include <boost/asio/awaitable.hpp>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "session/session.hpp"

namespace sandgate::server {

// MCP's (and JSON-RPC's implementation-defined) "Resource not found".
inline constexpr int kResourceNotFound = -32002;

class FileResources {
 public:
  // `replica`: this gateway's replica name (keys then name it, as session ids do, so that a
  // 2026-07-28 resources/read reaching another replica is forwarded to this one).
  explicit FileResources(std::uint64_t read_max_bytes, std::string replica = {},
                         std::size_t max_per_tenant = 1024, std::size_t max_entries = 16384)
      : read_max_bytes_(read_max_bytes),
        replica_(std::move(replica)),
        max_per_tenant_(max_per_tenant),
        max_entries_(max_entries),
        reads_(reads_at_once(read_max_bytes), kReadsWaiting),
        shared_reads_{reads_, std::max<std::size_t>(1, reads_at_once(read_max_bytes) / 2)} {}

  // Reads that may run at once, gateway-wide: one read holds up to about five copies of its file
  // (transfer memfd, content, base64, JSON, response), so together they stay near
  // kReadMemoryBudget. Beyond, reads wait their turn (up to kReadsWaiting, then a busy error).
  // Each tenant holds at most half of them (at least one), and a freed one goes to the waiting
  // tenant reading least (the call slots' fair share).
  static constexpr std::uint64_t kReadMemoryBudget = 512ull << 20;
  static constexpr std::size_t kReadsWaiting = 64;
  static std::size_t reads_at_once(std::uint64_t read_max_bytes) {
    std::uint64_t per_read = 5 * std::max<std::uint64_t>(read_max_bytes, 1);
    return static_cast<std::size_t>(std::clamp<std::uint64_t>(kReadMemoryBudget / per_read, 1, 64));
  }

  // The URI of `path` (relative to /work) in `sandbox`, readable by `tenant` from now on.
  std::string mint(const std::string& tenant, const std::shared_ptr<session::Session>& session,
                   const std::shared_ptr<sandbox::Sandbox>& sandbox, const std::string& path);
  // resources/read's {"result": {"contents": […]}} or {"error": {"code", "message"}}.
  boost::asio::awaitable<nlohmann::json> read(std::string tenant, nlohmann::json params);
  std::uint64_t read_max_bytes() const { return read_max_bytes_; }

 private:
  struct Entry {
    std::string tenant;
    std::weak_ptr<session::Session> session;
    std::weak_ptr<sandbox::Sandbox> sandbox;
    std::string path;
  };
  struct Key {
    std::weak_ptr<sandbox::Sandbox> sandbox;
    std::string key;
  };
  const std::uint64_t read_max_bytes_;
  const std::string replica_;
  const std::size_t max_per_tenant_;
  const std::size_t max_entries_;
  // What a finished read of `path` becomes: its contents (text or blob) or why not.
  nlohmann::json contents_of(std::optional<sandbox::TransferResult>& read, const std::string& uri,
                             const std::string& path) const;
  // Drops the oldest entry of `tenant`.
  void evict_oldest_locked(const std::string& tenant);
  // Drops entries whose sandbox is gone; returns how many.
  std::size_t prune_locked();
  std::mutex mutex_;
  std::unordered_map<std::string, Entry> entries_;                      // by URI
  std::unordered_map<std::string, std::deque<std::string>> by_tenant_;  // URIs, oldest first
  std::unordered_map<const sandbox::Sandbox*, Key> keys_;
  session::CallSlots reads_;
  const session::TenantBound shared_reads_;
};

// "sandgate://sandbox/<key>/work/<path>", the path percent-encoded where needed.
std::string file_uri(const std::string& key, const std::string& path);
// The <key> of such a URI ("" when it is not one): it has the shape of a session id.
std::string file_uri_key(std::string_view uri);
// The mimeType a file's name suggests ("" when it suggests none).
std::string mime_for_name(const std::string& path);

}  // namespace sandgate::server
