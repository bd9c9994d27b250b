// The execute tool's definition as tools/list offers it (server/tools/execute_schema).
#include "server/tools/execute_schema.hpp"

#include <catch2/catch.hpp>

#include "server/tools/execute_arguments.hpp"

using namespace sandgate::server;
using nlohmann::json;

TEST_CASE("the execute tool's definition", "[unit][tool]") {
  json def = execute_tool_definition({60, 300, 1 << 20});
  CHECK(def["name"] == "execute");
  CHECK(def["annotations"]["readOnlyHint"] == false);
  CHECK(def["annotations"]["openWorldHint"] == false);
  CHECK(def["inputSchema"]["required"] == json::array({"code"}));
  // The schema's maximum is the larger one a task may ask for (1800 by default).
  CHECK(def["inputSchema"]["properties"]["timeout_seconds"]["maximum"] == 1800);
  CHECK(def["execution"]["taskSupport"] == "optional");
  sandgate::server::ToolLimits limits{60, 300, 1 << 20};
  limits.task_timeout_max_s = 100;
  CHECK(execute_tool_definition(
            limits)["inputSchema"]["properties"]["timeout_seconds"]["maximum"] == 300);
  auto too_long =
      parse_execute_arguments({{"code", "1"}, {"timeout_seconds", 900}}, {60, 300, 1 << 20});
  CHECK(too_long.error.find("as a task for up to 1800 s") != std::string::npos);
  CHECK(parse_execute_arguments({{"code", "1"}, {"timeout_seconds", 900}}, {60, 300, 1 << 20}, true)
            .request);
  CHECK(def["outputSchema"]["properties"].contains("spend_usd"));
  CHECK(def["description"].get<std::string>().find("no network") != std::string::npos);
  CHECK(def["description"].get<std::string>().find("/work") != std::string::npos);
}
