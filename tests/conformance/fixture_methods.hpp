#pragma once
// The conformance suite's resources, resource template, prompts, completion and (2025 only)
// resource subscriptions, answered through the gateway's MethodExtension hook in both eras.
#include <mutex>
#include <set>
#include <string>

#include "server/mcp/method_extension.hpp"

namespace sandgate::conformance {

class FixtureMethods final : public server::MethodExtension {
 public:
  nlohmann::json capabilities(std::string_view era) const override;
  bool serves(std::string_view method, std::string_view era) const override;
  boost::asio::awaitable<nlohmann::json> answer(
      std::string method, nlohmann::json params, std::string era,
      std::shared_ptr<server::CallEvents> events) override;
  bool cacheable(std::string_view method) const override;

 private:
  nlohmann::json subscribe(const nlohmann::json& params, bool on);
  std::mutex mutex_;
  std::set<std::string> subscriptions_;  // resource URIs (2025 sessions; shared, as a fixture)
};

}  // namespace sandgate::conformance
