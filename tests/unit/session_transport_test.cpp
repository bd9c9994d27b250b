// The Streamable HTTP transport's rules for a 2025-11-25 session (server/mcp/session_transport
// and what it uses in server/http/), each section named after the rule it checks. Requests go
// through the real endpoint (no socket); sandboxes are not needed for these rules.
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>
#include <catch2/catch.hpp>

#include "endpoint_fixture.hpp"
#include "server/http/media_type.hpp"
#include "tests/support/mcp_messages.hpp"

using namespace sandgate;
using namespace sandgate::server;
using nlohmann::json;
using namespace sandgate::server::testing;

TEST_CASE("Streamable HTTP transport rules", "[unit][transport][conformance]") {
  Transport t;

  SECTION("initialize creates a session with a 128-bit visible-ASCII Mcp-Session-Id") {
    std::string id = t.initialize();
    CHECK(id.size() == 32);
    CHECK(id.find_first_not_of("0123456789abcdef") == std::string::npos);
    CHECK(t.initialize() != id);
  }
  SECTION("version negotiation echoes a supported version and offers the latest otherwise") {
    auto old = t.post(request(1, "initialize", {{"protocolVersion", "2025-03-26"}}));
    CHECK(body_of(old)["result"]["protocolVersion"] == "2025-03-26");
    auto future = t.post(request(1, "initialize", {{"protocolVersion", "2099-01-01"}}));
    CHECK(body_of(future)["result"]["protocolVersion"] == "2025-11-25");
  }
  SECTION("Accept must list application/json and text/event-stream, else 406") {
    auto r = t.post(request(1, "initialize", {{"protocolVersion", "2025-11-25"}}),
                    {{"Accept", "application/json"}});
    CHECK(r.result() == http::status::not_acceptable);
  }
  SECTION("a body that is not application/json gets 415") {
    auto r = t.post(request(1, "ping"), {{"Content-Type", "text/plain"}});
    CHECK(r.result() == http::status::unsupported_media_type);
  }
  SECTION("missing token gets 401 with WWW-Authenticate: Bearer and a JSON body") {
    auto r = t.post(request(1, "ping"), {{"Authorization", ""}});
    CHECK(r.result() == http::status::unauthorized);
    CHECK(std::string(r[http::field::www_authenticate]).rfind("Bearer", 0) == 0);
    CHECK(body_of(r)["error"]["message"].get<std::string>().find("Unauthorized") == 0);
    CHECK(t.post(request(1, "ping"), {{"Authorization", "Bearer nope"}}).result() ==
          http::status::unauthorized);
  }
  SECTION("X-MCP-AUTH is accepted as the token header") {
    auto r = t.post(request(1, "initialize", {{"protocolVersion", "2025-11-25"}}),
                    {{"Authorization", ""}, {"X-MCP-AUTH", "tok-b"}});
    CHECK(r.result() == http::status::ok);
  }
  SECTION("an Origin that is not allowed gets 403; loopback origins are allowed") {
    CHECK(t.post(request(1, "ping"), {{"Origin", "https://evil.example.com"}}).result() ==
          http::status::forbidden);
    CHECK(t.post(request(1, "initialize", {{"protocolVersion", "2025-11-25"}}),
                 {{"Origin", "http://localhost:3000"}})
              .result() == http::status::ok);
    CHECK(t.endpoint.admission().origin_allowed("http://127.0.0.1:6274"));
    CHECK(t.endpoint.admission().origin_allowed("http://[::1]:80"));
    CHECK_FALSE(t.endpoint.admission().origin_allowed("http://localhost.evil.com"));
    CHECK_FALSE(t.endpoint.admission().origin_allowed("null"));
  }
  SECTION("loopback look-alike names are not loopback (DNS rebinding)") {
    for (std::string origin : {"http://127.evil.example", "http://127.0.0.1.evil.example",
                               "https://127.0.0.1.evil.example:8080", "http://localhost.",
                               "http://127.1", "http://0x7f000001", "http://[::1].evil"})
      CHECK_FALSE(t.endpoint.admission().origin_allowed(origin));
    for (std::string origin : {"http://127.0.0.1", "http://127.1.2.3:9", "http://[::1]",
                               "http://LocalHost:3000", "https://localhost"})
      CHECK(t.endpoint.admission().origin_allowed(origin));
    CHECK_FALSE(t.endpoint.admission().host_allowed("127.evil.example:8080"));
    CHECK_FALSE(t.endpoint.admission().host_allowed("127.0.0.1.evil.example"));
    CHECK(t.endpoint.admission().host_allowed("127.1.2.3:8080"));
    CHECK(t.endpoint.admission().host_allowed("[::1]:8080"));
    CHECK(t.post(request(1, "ping"), {{"Origin", "http://127.evil.example"}}).result() ==
          http::status::forbidden);
    CHECK_FALSE(is_loopback_host("127.evil.example"));
    CHECK(is_loopback_host("127.255.0.1"));
    CHECK(is_loopback_host("[::1]"));
  }
  SECTION("Content-Type is exactly one media type, application/json, parameters allowed") {
    for (std::string type : {"text/plain;a=,application/json", "application/json, text/plain",
                             "text/plain, application/json", "application/json;a=b,c",
                             "application/jsonx", "application/json/x", "application/json x",
                             "application/json;=b", "application/json;a=\"b", ""})
      CHECK_FALSE(is_json_content_type(type));
    for (std::string type :
         {"application/json", "Application/JSON", "application/json; charset=utf-8",
          "application/json;charset=\"utf-8\"", " application/json ", "application/json;",
          "application/json; a=\"x,y\""})
      CHECK(is_json_content_type(type));
    CHECK(
        t.post(request(1, "ping"), {{"Content-Type", "text/plain;a=,application/json"}}).result() ==
        http::status::unsupported_media_type);
  }
  SECTION("a Host that is not loopback gets 403 while bound to loopback") {
    CHECK(t.post(request(1, "ping"), {{"Host", "evil.example.com"}}).result() ==
          http::status::forbidden);
    CHECK(t.endpoint.admission().host_allowed("localhost:8080"));
  }
  SECTION("a non-initialize request without Mcp-Session-Id gets 400") {
    CHECK(t.post(request(2, "tools/list")).result() == http::status::bad_request);
  }
  SECTION("an unknown or ended session gets 404") {
    CHECK(t.post(request(2, "ping"), {{"Mcp-Session-Id", std::string(32, 'a')}}).result() ==
          http::status::not_found);
    CHECK(t.post(request(2, "ping"), {{"Mcp-Session-Id", "garbage\x01"}}).result() ==
          http::status::not_found);
  }
  SECTION("a session is usable only with the token (tenant) that created it") {
    std::string id = t.initialize("tok-a");
    CHECK(t.post(request(2, "ping"), {{"Mcp-Session-Id", id}, {"Authorization", "Bearer tok-b"}})
              .result() == http::status::not_found);
    CHECK(t.post(request(2, "ping"), {{"Mcp-Session-Id", id}}).result() == http::status::ok);
  }
  SECTION("an unsupported MCP-Protocol-Version gets 400; a missing one is accepted") {
    std::string id = t.initialize();
    CHECK(
        t.post(request(2, "ping"), {{"Mcp-Session-Id", id}, {"MCP-Protocol-Version", "1999-01-01"}})
            .result() == http::status::bad_request);
    CHECK(t.post(request(2, "ping"), {{"Mcp-Session-Id", id}}).result() == http::status::ok);
    CHECK(
        t.post(request(2, "ping"), {{"Mcp-Session-Id", id}, {"MCP-Protocol-Version", "2025-06-18"}})
            .result() == http::status::ok);
  }
  SECTION("notifications and responses get 202 with no body") {
    std::string id = t.initialize();
    auto n = t.post({{"jsonrpc", "2.0"}, {"method", "notifications/initialized"}},
                    {{"Mcp-Session-Id", id}});
    CHECK(n.result() == http::status::accepted);
    CHECK(n.body().empty());
    auto r = t.post({{"jsonrpc", "2.0"}, {"id", 9}, {"result", json::object()}},
                    {{"Mcp-Session-Id", id}});
    CHECK(r.result() == http::status::accepted);
  }
  SECTION("a batch is rejected with -32600 and malformed JSON with -32700") {
    std::string id = t.initialize();
    auto batch =
        t.send(http::verb::post, "[" + request(1, "ping").dump() + "]", {{"Mcp-Session-Id", id}});
    CHECK(batch.result() == http::status::bad_request);
    CHECK(body_of(batch)["error"]["code"] == -32600);
    auto bad = t.send(http::verb::post, "{nope", {{"Mcp-Session-Id", id}});
    CHECK(bad.result() == http::status::bad_request);
    CHECK(body_of(bad)["error"]["code"] == -32700);
  }
  SECTION("unknown method gets -32601, unknown tool -32602") {
    std::string id = t.initialize();
    CHECK(body_of(t.post(request(3, "prompts/list"), {{"Mcp-Session-Id", id}}))["error"]["code"] ==
          -32601);
    auto tool =
        t.post(test::tool_call_message(4, "rm_rf", json::object()), {{"Mcp-Session-Id", id}});
    CHECK(body_of(tool)["error"]["code"] == -32602);
  }
  SECTION("invalid execute arguments are a tool error, not a protocol error (SEP-1303)") {
    std::string id = t.initialize();
    auto r = body_of(
        t.post(test::tool_call_message(5, "execute", {{"code", ""}}), {{"Mcp-Session-Id", id}}));
    CHECK(r["result"]["isError"] == true);
    CHECK(r["result"]["content"][0]["text"].get<std::string>().find("`code`") != std::string::npos);
  }
  SECTION("tools/list offers execute, then end_sandbox, and nothing else") {
    std::string id = t.initialize();
    auto r = body_of(t.post(request(6, "tools/list"), {{"Mcp-Session-Id", id}}));
    REQUIRE(r["result"]["tools"].size() == 2);
    CHECK(r["result"]["tools"][0]["name"] == "execute");
    CHECK(r["result"]["tools"][1]["name"] == "end_sandbox");
    CHECK_FALSE(r["result"].contains("resultType"));  // a 2026-07-28 field, not of this era
  }
  SECTION("logging/setLevel accepts a syslog level and rejects others with -32602") {
    std::string id = t.initialize();
    CHECK(body_of(t.post(request(7, "logging/setLevel", {{"level", "warning"}}),
                         {{"Mcp-Session-Id", id}}))
              .contains("result"));
    CHECK(body_of(t.post(request(8, "logging/setLevel", {{"level", "loud"}}),
                         {{"Mcp-Session-Id", id}}))["error"]["code"] == -32602);
  }
  SECTION("DELETE ends the session; later requests get 404") {
    std::string id = t.initialize();
    CHECK(t.send(http::verb::delete_, "", {{"Mcp-Session-Id", id}}).result() == http::status::ok);
    CHECK(t.post(request(2, "ping"), {{"Mcp-Session-Id", id}}).result() == http::status::not_found);
    CHECK(t.send(http::verb::delete_, "", {{"Mcp-Session-Id", id}}).result() ==
          http::status::not_found);
  }
  SECTION("GET has no standalone stream: 405") {
    std::string id = t.initialize();
    auto r = t.send(http::verb::get, "", {{"Mcp-Session-Id", id}});
    CHECK(r.result() == http::status::method_not_allowed);
  }
  SECTION("over the per-tenant session limit, initialize gets 429 with a JSON-RPC error") {
    t.initialize();
    t.initialize();
    auto r = t.post(request(1, "initialize", {{"protocolVersion", "2025-11-25"}}));
    CHECK(r.result() == http::status::too_many_requests);
    CHECK(body_of(r)["error"]["message"].get<std::string>().find("Too many sessions") == 0);
    // Another tenant is not affected.
    CHECK(t.post(request(1, "initialize", {{"protocolVersion", "2025-11-25"}}),
                 {{"Authorization", "Bearer tok-b"}})
              .result() == http::status::ok);
  }
}
