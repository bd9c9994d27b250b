// 2026-07-28 Mcp-Param headers (server/mcp/param_headers): they mirror the arguments a tool's
// schema marks.
#include "server/mcp/param_headers.hpp"

#include <catch2/catch.hpp>
#include <map>
#include <string>

using namespace sandgate::server;
using nlohmann::json;

TEST_CASE("2026-07-28 Mcp-Param headers must mirror the arguments a schema marks",
          "[unit][stateless]") {
  json schema = {{"type", "object"},
                 {"properties",
                  {{"region", {{"type", "string"}, {"x-mcp-header", "Region"}}},
                   {"n", {{"type", "integer"}, {"x-mcp-header", "N"}}},
                   {"opts",
                    {{"type", "object"},
                     {"properties", {{"fast", {{"type", "boolean"}, {"x-mcp-header", "Fast"}}}}}}},
                   {"list", {{"type", "array"}, {"items", {{"x-mcp-header", "Ignored"}}}}}}}};
  auto with = [](std::map<std::string, std::string> headers) {
    Request req{http::verb::post, "/mcp", 11};
    for (auto& [k, v] : headers) req.set(k, v);
    return req;
  };
  json args = {{"region", "Zürich"}, {"n", 42}, {"opts", {{"fast", true}}}, {"list", {1}}};
  auto good = with({{"Mcp-Param-Region", "=?base64?WsO8cmljaA==?="},
                    {"mcp-param-n", "42"},
                    {"Mcp-Param-Fast", "true"}});
  CHECK(param_header_problem(good, schema, args) == "");
  CHECK(param_header_problem(good, schema, {{"n", 42.0}}) == "");       // compared as numbers
  CHECK(param_header_problem(with({}), schema, json::object()) == "");  // nothing mirrored
  CHECK(param_header_problem(with({{"Mcp-Param-N", "42"}}), schema, {{"region", "x"}}) ==
        "the Mcp-Param-Region header is missing");
  CHECK(param_header_problem(with({{"Mcp-Param-N", "41"}}), schema, {{"n", 42}}) ==
        "Mcp-Param-N header differs from the argument's value");
  CHECK_FALSE(
      param_header_problem(with({{"Mcp-Param-Fast", "yes"}}), schema, {{"opts", {{"fast", true}}}})
          .empty());
  CHECK_FALSE(
      param_header_problem(with({{"Mcp-Param-Region", "=?base64?WsO8?=="}}), schema, args).empty());
}
