#pragma once
// Methods beyond tools that a server may add, served in both eras: the conformance suite's
// fixture server adds resources, prompts and completion through this; the production gateway
// adds none (and so announces no such capability).
#include <boost/asio/awaitable.hpp>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "server/tools/tool.hpp"

namespace sandgate::server {

class MethodExtension {
 public:
  virtual ~MethodExtension() = default;
  // `era` below is the protocol revision of the request: a session one ("2025-11-25") or the
  // stateless "2026-07-28" — what a method promises can differ between them (2025's
  // resources/subscribe has no 2026 counterpart here).
  // Merged into the capabilities initialize and server/discover announce.
  virtual nlohmann::json capabilities(std::string_view era) const = 0;
  // Whether this extension answers `method`.
  virtual bool serves(std::string_view method, std::string_view era) const = 0;
  // {"result": {...}} or {"error": {"code": …, "message": …, "data"?: …}}.
  virtual boost::asio::awaitable<nlohmann::json> answer(std::string method, nlohmann::json params,
                                                        std::string era,
                                                        std::shared_ptr<CallEvents> events) = 0;
  // Whether `method`'s result is a list that 2026-07-28 caches (it then gets ttlMs and
  // cacheScope).
  virtual bool cacheable(std::string_view method) const = 0;
};

}  // namespace sandgate::server
