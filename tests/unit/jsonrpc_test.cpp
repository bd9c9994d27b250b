#include "server/mcp/jsonrpc.hpp"

#include <catch2/catch.hpp>

#include "common/bounded_json.hpp"

using namespace sandgate::server;

TEST_CASE("JSON-RPC messages are classified", "[unit][jsonrpc]") {
  SECTION("malformed JSON is a parse error (-32700)") {
    auto m = jsonrpc::parse("{\"jsonrpc\":");
    CHECK(m.kind == jsonrpc::Kind::invalid);
    CHECK(m.error_code == jsonrpc::parse_error);
  }
  SECTION("a batch (JSON array) is an invalid request: batching was removed") {
    auto m = jsonrpc::parse(R"([{"jsonrpc":"2.0","id":1,"method":"ping"}])");
    CHECK(m.kind == jsonrpc::Kind::invalid);
    CHECK(m.error_code == jsonrpc::invalid_request);
  }
  SECTION("a wrong jsonrpc version is an invalid request that keeps its id") {
    auto m = jsonrpc::parse(R"({"jsonrpc":"1.0","id":7,"method":"ping"})");
    CHECK(m.error_code == jsonrpc::invalid_request);
    CHECK(m.id == 7);
  }
  SECTION("an id that is neither string nor integer is invalid") {
    CHECK(jsonrpc::parse(R"({"jsonrpc":"2.0","id":{},"method":"ping"})").kind ==
          jsonrpc::Kind::invalid);
    CHECK(jsonrpc::parse(R"({"jsonrpc":"2.0","id":1.5,"method":"ping"})").kind ==
          jsonrpc::Kind::invalid);
  }
  SECTION("request, notification and response") {
    CHECK(jsonrpc::parse(R"({"jsonrpc":"2.0","id":"a","method":"ping"})").kind ==
          jsonrpc::Kind::request);
    CHECK(jsonrpc::parse(R"({"jsonrpc":"2.0","method":"notifications/initialized"})").kind ==
          jsonrpc::Kind::notification);
    CHECK(jsonrpc::parse(R"({"jsonrpc":"2.0","id":3,"result":{}})").kind ==
          jsonrpc::Kind::response);
  }
  SECTION("params must be structured") {
    CHECK(jsonrpc::parse(R"({"jsonrpc":"2.0","id":1,"method":"ping","params":3})").kind ==
          jsonrpc::Kind::invalid);
  }
  SECTION("a non-object body is invalid") {
    CHECK(jsonrpc::parse("42").error_code == jsonrpc::invalid_request);
  }
}

namespace {
// `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"a":` + nesting + `}`: params nested
// `levels` deep in total (params itself is level 2 of the document).
std::string nested_params(std::size_t levels, bool arrays) {
  std::string open = arrays ? "[" : "{\"a\":", close = arrays ? "]" : "}";
  std::string body = R"({"jsonrpc":"2.0","id":1,"method":"ping","params":{"a":)";
  body.reserve(body.size() + levels * (open.size() + 1));
  for (std::size_t i = 0; i < levels; ++i) body += open;
  body += "0";
  for (std::size_t i = 0; i < levels; ++i) body += close;
  return body + "}}";
}
}  // namespace

TEST_CASE("JSON nesting depth is bounded while parsing", "[unit][jsonrpc][depth]") {
  using sandgate::kMaxJsonDepth;
  // The document's own object and params take two levels.
  SECTION("up to the bound a message parses") {
    CHECK(jsonrpc::parse(nested_params(kMaxJsonDepth - 2, true)).kind == jsonrpc::Kind::request);
    CHECK(jsonrpc::parse(nested_params(kMaxJsonDepth - 2, false)).kind == jsonrpc::Kind::request);
  }
  SECTION("one level more is a parse error, arrays or objects") {
    for (bool arrays : {true, false}) {
      auto m = jsonrpc::parse(nested_params(kMaxJsonDepth - 1, arrays));
      CHECK(m.kind == jsonrpc::Kind::invalid);
      CHECK(m.error_code == jsonrpc::parse_error);
    }
  }
  SECTION("200,000 levels (the body that overflowed the stack) are refused, not built") {
    for (bool arrays : {true, false}) {
      auto m = jsonrpc::parse(nested_params(200'000, arrays));
      CHECK(m.kind == jsonrpc::Kind::invalid);
      CHECK(m.error_code == jsonrpc::parse_error);
    }
    // Unbalanced too: only opening brackets, as an attacker would send.
    CHECK(jsonrpc::parse(std::string(400'000, '[')).error_code == jsonrpc::parse_error);
  }
  SECTION("a syntax error is still a parse error") {
    CHECK(sandgate::parse_bounded_json("[1,").fault == sandgate::JsonFault::syntax);
    CHECK(sandgate::parse_bounded_json("[[1]]", 1).fault == sandgate::JsonFault::too_deep);
    CHECK(sandgate::parse_bounded_json("[[1]]", 2).value == nlohmann::json::parse("[[1]]"));
  }
}
