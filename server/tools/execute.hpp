#pragma once
// The `execute` tool: runs a program in the caller's sandbox and maps the run to a
// CallToolResult. Logs and counts every call (metadata only).
#include "execute_tool.hpp"
#include "server/metrics.hpp"
#include "tool.hpp"

namespace sandgate::server {

class ExecuteTool final : public Tool {
 public:
  ExecuteTool(ToolLimits limits, Metrics& metrics);
  const std::string& name() const override { return name_; }
  nlohmann::json definition() const override { return execute_tool_definition(limits_); }
  boost::asio::awaitable<nlohmann::json> call(ToolCall call) override;

 private:
  const std::string name_ = "execute";
  ToolLimits limits_;
  Metrics& metrics_;
};

}  // namespace sandgate::server
