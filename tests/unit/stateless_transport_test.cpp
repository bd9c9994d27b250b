// The 2026-07-28 (stateless) rules of the /mcp endpoint, each section named after the rule it
// checks: the era a request belongs to, server/discover, the _meta envelope and the headers
// that mirror the body, the result fields, and what GET/DELETE get without a session.
#include "endpoint_fixture.hpp"
#include "session/session_id.hpp"

using namespace sandgate;
using namespace sandgate::server;
using namespace sandgate::server::testing;
using nlohmann::json;

namespace {

const json kMeta = {{"io.modelcontextprotocol/protocolVersion", "2026-07-28"},
                    {"io.modelcontextprotocol/clientCapabilities", json::object()}};

json modern(int id, const std::string& method, json params = json::object(), json meta = kMeta) {
  params["_meta"] = std::move(meta);
  return request(id, method, std::move(params));
}

// The headers a 2026-07-28 client sends with `method` (and `name` for tools/call).
std::map<std::string, std::string> headers_for(const std::string& method,
                                               const std::string& name = "") {
  std::map<std::string, std::string> h = {{"MCP-Protocol-Version", "2026-07-28"},
                                          {"Mcp-Method", method}};
  if (!name.empty()) h["Mcp-Name"] = name;
  return h;
}

}  // namespace

TEST_CASE("2026-07-28 requests are served without a session", "[unit][transport][stateless]") {
  Transport t;

  SECTION("server/discover names every version served, the tools capability and serverInfo") {
    auto r = t.post(modern(1, "server/discover"), headers_for("server/discover"));
    REQUIRE(r.result() == http::status::ok);
    CHECK(r["Mcp-Session-Id"].empty());  // never minted on this path
    json result = body_of(r)["result"];
    CHECK(result["resultType"] == "complete");
    CHECK(result["supportedVersions"] ==
          json({"2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26"}));
    CHECK(result["capabilities"].contains("tools"));
    CHECK(result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "sandgate");
    CHECK(result["ttlMs"].is_number_integer());
    CHECK(result["cacheScope"] == "public");
    CHECK(result["instructions"].get<std::string>().find("sandbox_id") != std::string::npos);
  }
  SECTION("tools/list carries resultType and cache fields, tools in a fixed order") {
    auto r = body_of(t.post(modern(2, "tools/list"), headers_for("tools/list")))["result"];
    CHECK(r["resultType"] == "complete");
    CHECK(r["ttlMs"].get<int>() >= 0);
    CHECK(r["cacheScope"] == "public");
    REQUIRE(r["tools"].size() == 2);
    CHECK(r["tools"][0]["name"] == "execute");
    CHECK(r["tools"][1]["name"] == "end_sandbox");
    CHECK(r["tools"][0]["inputSchema"]["properties"].contains("sandbox_id"));
  }
  SECTION("a missing or malformed envelope is -32602 with HTTP 400") {
    json no_caps = {{"io.modelcontextprotocol/protocolVersion", "2026-07-28"}};
    auto r = t.post(modern(3, "tools/list", json::object(), no_caps), headers_for("tools/list"));
    CHECK(r.result() == http::status::bad_request);
    CHECK(body_of(r)["error"]["code"] == -32602);
    CHECK(body_of(r)["id"] == 3);
    // No _meta at all, but the header says 2026-07-28: still this era, still -32602.
    auto bare = t.post(request(4, "tools/list"), headers_for("tools/list"));
    CHECK(bare.result() == http::status::bad_request);
    CHECK(body_of(bare)["error"]["code"] == -32602);
  }
  SECTION("headers must mirror the body: -32020 with HTTP 400") {
    auto no_version = t.post(modern(5, "tools/list"), {{"Mcp-Method", "tools/list"}});
    CHECK(no_version.result() == http::status::bad_request);
    CHECK(body_of(no_version)["error"]["code"] == -32020);
    auto wrong_method = t.post(modern(6, "tools/list"), headers_for("TOOLS/LIST"));
    CHECK(body_of(wrong_method)["error"]["code"] == -32020);
    auto no_name =
        t.post(modern(7, "tools/call", {{"name", "execute"}}), headers_for("tools/call"));
    CHECK(body_of(no_name)["error"]["code"] == -32020);
    auto wrong_name = t.post(modern(8, "tools/call", {{"name", "execute"}}),
                             headers_for("tools/call", "end_sandbox"));
    CHECK(body_of(wrong_name)["error"]["code"] == -32020);
    auto bad_base64 = t.post(modern(9, "tools/call", {{"name", "execute"}}),
                             headers_for("tools/call", "=?base64?!!!!?="));
    CHECK(body_of(bad_base64)["error"]["code"] == -32020);
  }
  SECTION("an Mcp-Name in base64 form is decoded before it is compared") {
    // "end_sandbox" in base64; the call itself then fails as a tool (no sandbox_id here).
    auto r = t.post(modern(10, "tools/call", {{"name", "end_sandbox"}}),
                    headers_for("tools/call", "=?base64?ZW5kX3NhbmRib3g=?="));
    REQUIRE(r.result() == http::status::ok);
    CHECK(body_of(r)["result"]["isError"] == true);
    CHECK(body_of(r)["result"]["resultType"] == "complete");
  }
  SECTION("an unsupported version is -32022 with the supported list, after the header check") {
    json v999 = {{"io.modelcontextprotocol/protocolVersion", "v999"},
                 {"io.modelcontextprotocol/clientCapabilities", json::object()}};
    auto r = t.post(modern(11, "tools/list", json::object(), v999),
                    {{"MCP-Protocol-Version", "v999"}, {"Mcp-Method", "tools/list"}});
    CHECK(r.result() == http::status::bad_request);
    auto error = body_of(r)["error"];
    CHECK(error["code"] == -32022);
    CHECK(error["data"]["requested"] == "v999");
    CHECK(error["data"]["supported"][0] == "2026-07-28");
    auto disagree =
        t.post(modern(12, "tools/list", json::object(), v999), headers_for("tools/list"));
    CHECK(body_of(disagree)["error"]["code"] == -32020);
  }
  SECTION("methods of the session era are unknown here: 404 with -32601") {
    for (std::string method : {"ping", "initialize", "logging/setLevel", "prompts/list"}) {
      auto r = t.post(modern(13, method), headers_for(method));
      CHECK(r.result() == http::status::not_found);
      CHECK(body_of(r)["error"]["code"] == -32601);
    }
  }
  SECTION("a bad log level is -32602") {
    json meta = kMeta;
    meta["io.modelcontextprotocol/logLevel"] = "loud";
    auto r = t.post(modern(14, "tools/list", json::object(), meta), headers_for("tools/list"));
    CHECK(body_of(r)["error"]["code"] == -32602);
  }
  SECTION("a notification is accepted with 202") {
    json note = {{"jsonrpc", "2.0"},
                 {"method", "notifications/cancelled"},
                 {"params", {{"requestId", 1}, {"_meta", kMeta}}}};
    CHECK(t.post(note, headers_for("notifications/cancelled")).result() == http::status::accepted);
  }
  SECTION("GET and DELETE without a session are 405, allowing POST") {
    for (auto verb : {http::verb::get, http::verb::delete_}) {
      auto r = t.send(verb, "");
      CHECK(r.result() == http::status::method_not_allowed);
      CHECK(r[http::field::allow] == "POST");
    }
  }
  SECTION("an unknown tool is a JSON-RPC error, not a refusal of the request") {
    auto r =
        t.post(modern(15, "tools/call", {{"name", "nope"}}), headers_for("tools/call", "nope"));
    CHECK(r.result() == http::status::ok);
    CHECK(body_of(r)["error"]["code"] == -32602);
  }
  SECTION(
      "a sandbox_id that is not one of ours, or is unknown, is a tool error the model can use") {
    auto junk = t.post(modern(16, "tools/call",
                              {{"name", "execute"},
                               {"arguments", {{"code", "print(1)"}, {"sandbox_id", "../../etc"}}}}),
                       headers_for("tools/call", "execute"));
    auto junk_result = body_of(junk)["result"];
    CHECK(junk_result["isError"] == true);
    auto text = junk_result["content"][0]["text"].get<std::string>();
    CHECK(text.find("omit it") != std::string::npos);
    CHECK(text.find("../../etc") == std::string::npos);  // hostile text is not echoed
    std::string unknown = session::new_handle_id();
    auto gone = t.post(modern(17, "tools/call",
                              {{"name", "execute"},
                               {"arguments", {{"code", "print(1)"}, {"sandbox_id", unknown}}}}),
                       headers_for("tools/call", "execute"));
    auto gone_text = body_of(gone)["result"]["content"][0]["text"].get<std::string>();
    CHECK(gone_text.find("Omit sandbox_id to start a new one") != std::string::npos);
  }
  SECTION("the 2025 era is untouched: initialize still makes a session, without resultType") {
    std::string id = t.initialize();
    auto r = body_of(t.post(request(18, "tools/list"), {{"Mcp-Session-Id", id}}));
    CHECK_FALSE(r["result"].contains("resultType"));
    CHECK_FALSE(r["result"].contains("ttlMs"));
  }
}
