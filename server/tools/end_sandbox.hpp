#pragma once
// The `end_sandbox` tool: ends a sandbox on purpose (processes killed, /work gone), so that a
// careful client frees what it holds without waiting for idle expiry — the only way to end a
// handle where there is no session to DELETE.
#include "session/registry.hpp"
#include "tool.hpp"

namespace sandgate::server {

class EndSandboxTool final : public Tool {
 public:
  explicit EndSandboxTool(session::Registry& registry) : registry_(registry) {}
  const std::string& name() const override { return name_; }
  nlohmann::json definition() const override;
  boost::asio::awaitable<nlohmann::json> call(ToolCall call) override;

 private:
  const std::string name_ = "end_sandbox";
  session::Registry& registry_;
};

}  // namespace sandgate::server
