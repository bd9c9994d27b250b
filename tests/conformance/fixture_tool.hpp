#pragma once
// One fixture tool: a fixed tools/list entry and a handler. The handlers are free functions
// (nothing captured), so a coroutine handler owns everything it uses in its own frame.
#include <boost/asio/awaitable.hpp>
#include <nlohmann/json.hpp>
#include <string>

#include "server/tools/tool.hpp"

namespace sandgate::conformance {

using nlohmann::json;
using server::ToolCall;

// A CallToolResult with one text block.
inline json text_result(const std::string& text, bool is_error = false) {
  return {{"content", json::array({{{"type", "text"}, {"text", text}}})}, {"isError", is_error}};
}

// A tools/list entry taking no arguments unless `properties`/`required` say otherwise.
inline json tool_definition(const std::string& name, const std::string& description,
                            json properties = json::object(), json required = json::array()) {
  json schema = {{"type", "object"}, {"properties", std::move(properties)}};
  if (!required.empty()) schema["required"] = std::move(required);
  return {{"name", name}, {"description", description}, {"inputSchema", std::move(schema)}};
}

class FixtureTool final : public server::Tool {
 public:
  using Handler = boost::asio::awaitable<json> (*)(ToolCall);
  FixtureTool(json definition, Handler handler)
      : name_(definition.at("name").get<std::string>()),
        definition_(std::move(definition)),
        handler_(handler) {}

  const std::string& name() const override { return name_; }
  json definition() const override { return definition_; }
  boost::asio::awaitable<json> call(ToolCall call) override { return handler_(std::move(call)); }

 private:
  std::string name_;
  json definition_;
  Handler handler_;
};

}  // namespace sandgate::conformance
