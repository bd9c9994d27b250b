#include "server/jsonrpc.hpp"

#include <catch2/catch.hpp>

#include "server/json_dump.hpp"

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

TEST_CASE("dump_json writes what json::dump writes, invalid UTF-8 replaced", "[unit][jsonrpc]") {
  using sandgate::server::dump_json;
  nlohmann::json value = {{"text", std::string("a\"b\\c\n\x01 \xff\xfe ok \xe2\x82\xac")},
                          {"list", {1, 2.5, nullptr, true, "x"}},
                          {"nested", {{"empty", nlohmann::json::object()}, {"k", "v"}}},
                          {"big", std::string(300000, 'y')}};
  CHECK(dump_json(value) == value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  CHECK(dump_json(nlohmann::json("\xc3\x28")) == "\"\xef\xbf\xbd(\"");
}
