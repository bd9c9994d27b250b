// An environment's definition (environment/definition.cpp): the --environments file read, each
// bad definition refused with its name, key and reason, and the layer's hash.
#include "environment/definition.hpp"

#include <catch2/catch.hpp>
#include <string>

using namespace sandgate::environment;

namespace {

std::string one(const std::string& body) {
  return R"({"analysis": )" + body + "}";
}

}  // namespace

TEST_CASE("an environments file reads every definition with its defaults", "[unit][environments]") {
  auto defs = parse_definitions(R"({
    "analysis": {"setup": "pip install x", "verify": "python3 -c 'import x'",
                 "egress": ["pypi.internal.example", "10.0.0.7:8443"], "preload": ["x.y"],
                 "description": "x 1.0", "pool": {"min": 1, "max": 4},
                 "build_timeout_s": 60, "max_size_mb": 100},
    "tiny": {"setup": "true", "verify": "true"}})");
  REQUIRE(defs.size() == 2);
  const auto& a = defs.at("analysis");
  CHECK(a.name == "analysis");
  CHECK(a.egress == std::vector<std::string>{"pypi.internal.example", "10.0.0.7:8443"});
  CHECK(a.preload == std::vector<std::string>{"x.y"});
  CHECK(a.pool_min == 1);
  CHECK(a.pool_max == 4);
  CHECK(a.build_timeout == std::chrono::seconds(60));
  CHECK(a.max_size_bytes == 100ull << 20);
  const auto& t = defs.at("tiny");
  CHECK(t.egress.empty());
  CHECK(t.pool_max == 2);
  CHECK(t.build_timeout == std::chrono::seconds(900));
  CHECK(parse_definitions("{}").empty());
}

TEST_CASE("a bad definition is refused with the environment, the key and why",
          "[unit][environments]") {
  struct Case {
    std::string text, expected;
  };
  for (const auto& c : std::vector<Case>{
           {"[1]", "must be a JSON object"},
           {"{", "not valid JSON"},
           {one(R"({"verify": "true"})"), "environment 'analysis', key 'setup': is required"},
           {one(R"({"setup": "true"})"), "key 'verify': is required"},
           {one(R"({"setup": " ", "verify": "true"})"), "key 'setup': must not be empty"},
           {one(R"({"setup": 1, "verify": "true"})"), "key 'setup': must be a string"},
           {one(R"({"setup": "true", "verify": "true", "colour": "red"})"),
            "key 'colour': is not an environment setting"},
           {one(R"({"setup": "true", "verify": "true", "egress": ["a b"]})"), "key 'egress'"},
           {one(R"({"setup": "true", "verify": "true", "egress": "pypi.org"})"),
            "key 'egress': must be a list of strings"},
           {one(R"({"setup": "true", "verify": "true", "preload": ["os; import x"]})"),
            "key 'preload'"},
           {one(R"({"setup": "true", "verify": "true", "pool": {"min": 3, "max": 1}})"),
            "min is larger than max"},
           {one(R"({"setup": "true", "verify": "true", "build_timeout_s": 1})"),
            "key 'build_timeout_s': must be between 10"},
           {one(R"({"setup": "true", "verify": "true", "max_size_mb": -1})"),
            "key 'max_size_mb': must be a whole number"},
           {one(R"("pip install x")"), "environment 'analysis': must be an object"},
           {R"({"base": {"setup": "true", "verify": "true"}})", "'base' names the system"},
           {R"({"Big": {"setup": "true", "verify": "true"}})", "a name is made of a-z"},
           {R"({"": {"setup": "true", "verify": "true"}})", "1 to 63 characters"},
       }) {
    INFO(c.text);
    CHECK_THROWS_WITH(parse_definitions(c.text), Catch::Contains(c.expected));
  }
  CHECK_THROWS_AS(read_definitions_file("/nonexistent/environments.json"), DefinitionError);
  std::string deep(100, '[');
  CHECK_THROWS_WITH(parse_definitions(deep),
                    Catch::Contains("nested too deeply") || Catch::Contains("not valid JSON"));
}

TEST_CASE("a layer's hash follows what builds it, not what describes it", "[unit][environments]") {
  auto base = parse_definitions(one(R"({"setup": "pip install x", "verify": "true",
                                        "egress": ["b.example", "a.example"]})"))
                  .at("analysis");
  auto hash = layer_hash(base);
  CHECK(hash.size() == 64);
  CHECK(hash.find_first_not_of("0123456789abcdef") == std::string::npos);
  auto described = base;
  described.description = "another description";
  described.preload = {"x"};
  described.pool_max = 9;
  CHECK(layer_hash(described) == hash);
  auto reordered = base;
  reordered.egress = {"a.example", "b.example"};
  CHECK(layer_hash(reordered) == hash);
  auto changed = base;
  changed.setup = "pip install x==2";
  CHECK(layer_hash(changed) != hash);
  auto verified = base;
  verified.verify = "false";
  CHECK(layer_hash(verified) != hash);
  auto wider = base;
  wider.egress.push_back("c.example");
  CHECK(layer_hash(wider) != hash);
}
