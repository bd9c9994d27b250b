// The connection-free rules of talking to an upstream (upstream/negotiation): when a discover
// answer means a 2025-era server, which versions are accepted, and the mirrored headers of
// 2026-07-28 with their encoding and the schema rules that make a tool unusable.
#include "upstream/negotiation.hpp"

#include <catch2/catch.hpp>

using namespace sandgate::upstream;
using nlohmann::json;

namespace {
json error(int code) {
  return {{"jsonrpc", "2.0"}, {"id", 1}, {"error", {{"code", code}, {"message", "m"}}}};
}
}  // namespace

TEST_CASE("a discover answer falls back to initialize by the official clients' rule",
          "[unit][upstream]") {
  CHECK(falls_back_to_initialize(400, error(-32000)));
  CHECK(falls_back_to_initialize(404, error(-32601)));
  CHECK(falls_back_to_initialize(200, error(-32601)));
  CHECK(falls_back_to_initialize(400, nullptr));  // no JSON-RPC error: not a modern server
  // A modern server's own errors are not a reason to fall back.
  CHECK_FALSE(falls_back_to_initialize(400, error(-32022)));
  CHECK_FALSE(falls_back_to_initialize(400, error(-32020)));
  CHECK_FALSE(falls_back_to_initialize(401, nullptr));
  CHECK_FALSE(falls_back_to_initialize(200, json{{"result", json::object()}}));
  CHECK(accepted_legacy_version("2025-11-25"));
  CHECK(accepted_legacy_version("2025-06-18"));
  CHECK(accepted_legacy_version("2025-03-26"));
  CHECK_FALSE(accepted_legacy_version("2024-11-05"));
  auto meta = modern_meta();
  CHECK(meta["io.modelcontextprotocol/protocolVersion"] == "2026-07-28");
  CHECK(meta["io.modelcontextprotocol/clientCapabilities"] == json::object());
  CHECK(meta["io.modelcontextprotocol/clientInfo"]["name"] == "sandgate");
}

TEST_CASE("mirrored header values are plain ASCII or the base64 sentinel", "[unit][upstream]") {
  CHECK(mirrored_header_value("us-west1") == "us-west1");
  CHECK(mirrored_header_value("Hello, 世界") == "=?base64?SGVsbG8sIOS4lueVjA==?=");
  CHECK(mirrored_header_value(" padded ") == "=?base64?IHBhZGRlZCA=?=");
  CHECK(mirrored_header_value("line1\nline2") == "=?base64?bGluZTEKbGluZTI=?=");
  CHECK(mirrored_header_value("=?base64?literal?=") == "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?=");
}

TEST_CASE("x-mcp-header annotations: valid ones mirrored, bad ones make the tool unusable",
          "[unit][upstream]") {
  json schema = {{"type", "object"},
                 {"properties",
                  {{"region", {{"type", "string"}, {"x-mcp-header", "Region"}}},
                   {"n", {{"type", "integer"}, {"x-mcp-header", "N"}}},
                   {"opts",
                    {{"type", "object"},
                     {"properties", {{"dry", {{"type", "boolean"}, {"x-mcp-header", "Dry"}}}}}}},
                   {"query", {{"type", "string"}}}}}};
  CHECK(valid_header_annotations(schema));
  auto headers = param_headers(
      schema,
      {{"region", "us-west1"}, {"n", 42}, {"opts", {{"dry", true}}}, {"query", "SELECT 1"}});
  std::sort(headers.begin(), headers.end());
  CHECK(headers ==
        std::vector<std::pair<std::string, std::string>>{
            {"Mcp-Param-Dry", "true"}, {"Mcp-Param-N", "42"}, {"Mcp-Param-Region", "us-west1"}});
  CHECK(param_headers(schema, {{"region", nullptr}}).empty());  // null or absent: no header
  json under_items = {
      {"type", "object"},
      {"properties",
       {{"list", {{"type", "array"}, {"items", {{"type", "string"}, {"x-mcp-header", "L"}}}}}}}};
  CHECK_FALSE(valid_header_annotations(under_items));
  json number = {{"properties", {{"x", {{"type", "number"}, {"x-mcp-header", "X"}}}}}};
  CHECK_FALSE(valid_header_annotations(number));
  json twice = {{"properties",
                 {{"a", {{"type", "string"}, {"x-mcp-header", "Same"}}},
                  {"b", {{"type", "string"}, {"x-mcp-header", "same"}}}}}};
  CHECK_FALSE(valid_header_annotations(twice));
  json bad_name = {{"properties", {{"a", {{"type", "string"}, {"x-mcp-header", "Bad Name"}}}}}};
  CHECK_FALSE(valid_header_annotations(bad_name));
}
