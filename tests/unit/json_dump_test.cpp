// Serialisation into one buffer (common/json_dump): what json::dump writes, invalid UTF-8
// replaced.
#include "common/json_dump.hpp"

#include <catch2/catch.hpp>
#include <string>

TEST_CASE("dump_json writes what json::dump writes, invalid UTF-8 replaced", "[unit][jsonrpc]") {
  using sandgate::dump_json;
  nlohmann::json value = {{"text", std::string("a\"b\\c\n\x01 \xff\xfe ok \xe2\x82\xac")},
                          {"list", {1, 2.5, nullptr, true, "x"}},
                          {"nested", {{"empty", nlohmann::json::object()}, {"k", "v"}}},
                          {"big", std::string(300000, 'y')}};
  CHECK(dump_json(value) == value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  CHECK(dump_json(nlohmann::json("\xc3\x28")) == "\"\xef\xbf\xbd(\"");
}
