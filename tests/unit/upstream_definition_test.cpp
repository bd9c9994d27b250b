// The operator's upstreams file (upstream/definition): every refusal names the upstream, the key
// and why, and never a header's value; a good file gives each definition whole.
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <string>

#include "upstream/definition.hpp"

using namespace sandgate::upstream;

namespace {

// A file of this test's own, removed at the end.
struct File {
  std::filesystem::path path;
  File(const std::string& name, const std::string& text, mode_t mode)
      : path(std::filesystem::temp_directory_path() /
             ("sandgate-upstream-test-" + std::to_string(::getpid()) + "-" + name)) {
    {
      std::ofstream f(path, std::ios::trunc | std::ios::binary);
      f << text;
    }
    ::chmod(path.c_str(), mode);
  }
  ~File() { std::filesystem::remove(path); }
  std::string json_path() const { return "\"" + path.string() + "\""; }
};

std::string refusal(const std::string& text) {
  try {
    parse_upstreams(text);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "(accepted)";
}

std::string one(const std::string& body) {
  return R"({"tickets": {)" + body + "}}";
}
const std::string kUrl = R"("url": "https://mcp.tickets.example/mcp")";

}  // namespace

TEST_CASE("a good upstreams file gives each definition whole", "[unit][upstream]") {
  File token("token", "s3cret-value\n\n", 0600);
  File ca("ca", "-----BEGIN CERTIFICATE-----\n", 0644);
  auto set = parse_upstreams(R"({
    "tickets": {"url": "https://mcp.tickets.example:8443/v1/mcp?x=1",
                "headers": {"Authorization": {"file": )" +
                             token.json_path() +
                             R"(, "prefix": "Bearer "},
                            "X-Api-Key": {"file": )" +
                             token.json_path() +
                             R"(}},
                "tools": ["search", "get_ticket"],
                "description": "the support ticket system",
                "ca_file": )" +
                             ca.json_path() +
                             R"(,
                "limits": {"timeout_s": 30, "max_concurrency": 8, "max_answer_bytes": 1048576,
                           "tools_ttl_s": 60, "usd_per_call": 0.001}},
    "local": {"url": "http://127.0.0.1:3001/mcp"},
    "v6": {"url": "http://[::1]/mcp"},
    "named": {"url": "http://localhost:9000"}
  })");
  REQUIRE(set.size() == 4);
  const auto& t = *set.at("tickets");
  CHECK(t.name == "tickets");
  CHECK(t.tls);
  CHECK(t.host == "mcp.tickets.example");
  CHECK(t.port == "8443");
  CHECK(t.target == "/v1/mcp?x=1");
  REQUIRE(t.headers.size() == 2);
  // Trailing newlines are stripped; the prefix comes first.
  CHECK(t.headers[0] ==
        std::pair<std::string, std::string>{"Authorization", "Bearer s3cret-value"});
  CHECK(t.headers[1] == std::pair<std::string, std::string>{"X-Api-Key", "s3cret-value"});
  REQUIRE(t.tools);
  CHECK(t.allows("search"));
  CHECK(t.allows("get_ticket"));
  CHECK_FALSE(t.allows("delete_ticket"));
  CHECK(t.description == "the support ticket system");
  CHECK(t.ca_file == ca.path.string());
  CHECK(t.limits.call_timeout == std::chrono::seconds(30));
  CHECK(t.limits.max_concurrency == 8);
  CHECK(t.limits.max_answer_bytes == 1048576);
  CHECK(t.limits.tools_ttl == std::chrono::seconds(60));
  CHECK(t.limits.usd_per_call == Approx(0.001));
  const auto& local = *set.at("local");
  CHECK_FALSE(local.tls);
  CHECK(local.host == "127.0.0.1");
  CHECK(local.port == "3001");
  CHECK_FALSE(local.tools);
  CHECK(local.allows("anything"));
  CHECK(local.limits.call_timeout == std::chrono::seconds(60));  // the defaults
  CHECK(set.at("v6")->host == "::1");
  CHECK(set.at("v6")->port == "80");
  CHECK(set.at("named")->target == "/");
}

TEST_CASE("the upstreams file is read from disk, bounded", "[unit][upstream]") {
  File good("good.json", R"({"a": {"url": "https://a.example/mcp"}})", 0644);
  CHECK(read_upstreams_file(good.path).size() == 1);
  File big("big.json", std::string((1 << 20) + 1, ' '), 0644);
  CHECK_THROWS_WITH(read_upstreams_file(big.path), Catch::Contains("larger than 1 MiB"));
  CHECK_THROWS_WITH(read_upstreams_file("/nonexistent/upstreams.json"),
                    Catch::Contains("cannot read"));
}

TEST_CASE("the file's shape and names are checked", "[unit][upstream]") {
  CHECK_THAT(refusal("[1]"), Catch::Contains("JSON object"));
  CHECK_THAT(refusal("{"), Catch::Contains("not valid JSON"));
  std::string many = "{";
  for (int i = 0; i < 65; ++i)
    many += (i ? "," : "") + std::string("\"u") + std::to_string(i) +
            R"(": {"url": "https://a.example"})";
  CHECK_THAT(refusal(many + "}"), Catch::Contains("more than 64"));
  CHECK_THAT(refusal(R"({"Tickets": {"url": "https://a.example"}})"),
             Catch::Contains("upstream 'Tickets': name:"));
  CHECK_THAT(refusal(R"({"1t": {"url": "https://a.example"}})"), Catch::Contains("name:"));
  CHECK_THAT(refusal(R"({"a-b": {"url": "https://a.example"}})"), Catch::Contains("name:"));
  CHECK_THAT(refusal("{\"" + std::string(33, 'a') + R"(": {"url": "https://a.example"}})"),
             Catch::Contains("name:"));
  CHECK(refusal("{\"" + std::string(32, 'a') + R"(": {"url": "https://a.example"}})") ==
        "(accepted)");
  CHECK(refusal(one(kUrl + R"(, "colour": "blue")")) == "upstream 'tickets': colour: unknown key");
  CHECK(refusal(R"({"tickets": "https://a.example"})") ==
        "upstream 'tickets': definition: must be an object");
}

TEST_CASE("the url must be https, or http to a loopback host, without userinfo or fragment",
          "[unit][upstream]") {
  CHECK(refusal(one(R"("tools": [])")) == "upstream 'tickets': url: required");
  CHECK_THAT(refusal(one(R"("url": "http://mcp.tickets.example/mcp")")),
             Catch::StartsWith("upstream 'tickets': url: plain http:// is allowed only to a "
                               "loopback host"));
  CHECK_THAT(refusal(one(R"("url": "http://10.0.0.1/mcp")")), Catch::Contains("loopback"));
  CHECK_THAT(refusal(one(R"("url": "http://127.0.0.1.evil.example/mcp")")),
             Catch::Contains("loopback"));
  CHECK_THAT(refusal(one(R"("url": "ftp://a.example/mcp")")), Catch::Contains("url: must start"));
  CHECK_THAT(refusal(one(R"("url": "HTTPS://a.example/mcp")")), Catch::Contains("url: must start"));
  CHECK_THAT(refusal(one(R"("url": "https://user:pw@a.example/mcp")")),
             Catch::Contains("url: must not hold user information"));
  CHECK_THAT(refusal(one(R"("url": "https://a.example/mcp#x")")),
             Catch::Contains("url: must not hold a fragment"));
  CHECK_THAT(refusal(one(R"("url": "https://a.example:0/mcp")")), Catch::Contains("host[:port]"));
  CHECK_THAT(refusal(one(R"("url": "https:///mcp")")), Catch::Contains("host[:port]"));
  CHECK_THAT(refusal(one(R"("url": "https://a.example/m cp")")), Catch::Contains("url:"));
  CHECK_THAT(refusal(one(R"("url": 7)")), Catch::Contains("url: must be a string"));
}

TEST_CASE("header values come from files only their owner may read, never into a message",
          "[unit][upstream]") {
  File good("good", "Bearer tok-123", 0600);
  File group("group", "group-readable-secret", 0640);
  File others("others", "world-readable-secret", 0604);
  File crlf("crlf", "a\r\nInjected: x", 0600);
  File nul("nul", std::string("a\0b", 3), 0600);
  File big("big", std::string(8 * 1024 + 1, 'x'), 0600);
  auto header = [](const std::string& name, const std::string& spec) {
    return one(kUrl + R"(, "headers": {")" + name + R"(": )" + spec + "}");
  };
  auto file = [](const File& f) { return R"({"file": )" + f.json_path() + "}"; };
  CHECK(refusal(header("Authorization", file(good))) == "(accepted)");
  auto g = refusal(header("Authorization", file(group)));
  CHECK(g == "upstream 'tickets': headers.Authorization: " + group.path.string() +
                 " is readable by its group or others");
  CHECK_THAT(refusal(header("Authorization", file(others))),
             Catch::Contains("readable by its group or others"));
  auto c = refusal(header("Authorization", file(crlf)));
  CHECK_THAT(c, Catch::Contains("line break or NUL"));
  CHECK_THAT(c, !Catch::Contains("Injected"));
  CHECK_THAT(refusal(header("Authorization", file(nul))), Catch::Contains("line break or NUL"));
  CHECK_THAT(refusal(header("Authorization", file(big))), Catch::Contains("larger than 8 KiB"));
  CHECK_THAT(refusal(header("Authorization", R"({"file": "/nonexistent/token"})")),
             Catch::Contains("cannot be read"));
  CHECK_THAT(refusal(header("Authorization", R"({"file": "/tmp"})")),
             Catch::Contains("not a regular file"));
  CHECK_THAT(refusal(header("Authorization", R"({"prefix": "Bearer "})")),
             Catch::Contains("headers.Authorization.file: required"));
  CHECK_THAT(refusal(header("Authorization", R"("Bearer x")")),
             Catch::Contains("must be an object"));
  CHECK_THAT(
      refusal(header("Authorization", R"({"file": )" + good.json_path() + R"(, "mode": 1})")),
      Catch::Contains("headers.Authorization.mode: unknown key"));
  CHECK_THAT(
      refusal(header("Authorization", R"({"file": )" + good.json_path() + R"(, "prefix": 1})")),
      Catch::Contains("prefix: must be a string"));
  for (const char* reserved : {"Host", "content-length", "Transfer-Encoding", "Connection",
                               "Mcp-Session-Id", "MCP-Protocol-Version", "Mcp-Param-X"})
    CHECK_THAT(refusal(header(reserved, file(good))),
               Catch::Contains("the gateway sets this header itself"));
  CHECK_THAT(refusal(header("Bad Name", file(good))),
             Catch::Contains("not a valid HTTP header name"));
  CHECK_THAT(refusal(header("X:Y", file(good))), Catch::Contains("not a valid HTTP header name"));
  // No refusal ever holds a value.
  for (const File* f : {&group, &others, &crlf, &big}) {
    auto message = refusal(header("Authorization", file(*f)));
    CHECK_THAT(message, !Catch::Contains("secret") && !Catch::Contains("xxxxxxxx"));
  }
}

TEST_CASE("tools, description, ca_file and limits are checked", "[unit][upstream]") {
  CHECK_THAT(refusal(one(kUrl + R"(, "tools": "search")")),
             Catch::Contains("tools: must be an array"));
  CHECK_THAT(refusal(one(kUrl + R"(, "tools": ["a", "a"])")), Catch::Contains("listed twice"));
  CHECK_THAT(refusal(one(kUrl + R"(, "tools": [1])")), Catch::Contains("non-empty string"));
  CHECK_THAT(refusal(one(kUrl + R"(, "tools": [""])")), Catch::Contains("non-empty string"));
  CHECK(refusal(one(kUrl + R"(, "tools": [])")) == "(accepted)");
  CHECK_THAT(refusal(one(kUrl + R"(, "description": ")" + std::string(1025, 'd') + "\"")),
             Catch::Contains("description: longer than 1024 bytes"));
  CHECK_THAT(refusal(one(kUrl + R"(, "ca_file": "/nonexistent/ca.pem")")),
             Catch::Contains("ca_file: /nonexistent/ca.pem is not a readable file"));
  auto limit = [](const std::string& body) {
    return refusal(one(kUrl + R"(, "limits": {)" + body + "}"));
  };
  CHECK_THAT(limit(R"("timeout_s": 0)"), Catch::Contains("limits.timeout_s: must be between 1"));
  CHECK_THAT(limit(R"("timeout_s": 3601)"), Catch::Contains("limits.timeout_s"));
  CHECK_THAT(limit(R"("timeout_s": 1.5)"), Catch::Contains("must be an integer"));
  CHECK_THAT(limit(R"("max_concurrency": 1025)"), Catch::Contains("limits.max_concurrency"));
  CHECK_THAT(limit(R"("max_answer_bytes": 1023)"), Catch::Contains("limits.max_answer_bytes"));
  CHECK_THAT(limit(R"("max_answer_bytes": 67108865)"), Catch::Contains("limits.max_answer_bytes"));
  CHECK_THAT(limit(R"("tools_ttl_s": 86401)"), Catch::Contains("limits.tools_ttl_s"));
  CHECK_THAT(limit(R"("usd_per_call": -1)"), Catch::Contains("limits.usd_per_call"));
  CHECK_THAT(limit(R"("usd_per_call": 100.5)"), Catch::Contains("limits.usd_per_call"));
  CHECK_THAT(limit(R"("usd_per_call": "1")"), Catch::Contains("must be a number"));
  CHECK_THAT(limit(R"("retries": 3)"), Catch::Contains("limits.retries: unknown key"));
  CHECK(limit(R"("timeout_s": 1, "max_answer_bytes": 1024, "usd_per_call": 0)") == "(accepted)");
}
