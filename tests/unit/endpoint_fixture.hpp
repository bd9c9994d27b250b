#pragma once
// An MCP endpoint driven in memory (no socket): the real admission, transports and tools, with
// two tenants' tokens ("tok-a" -> a, "tok-b" -> b). Sandboxes are made only when a test runs
// code.
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>
#include <catch2/catch.hpp>
#include <map>

#include "auth/token_store.hpp"
#include "server/gateway/config.hpp"
#include "server/gateway/tenant_defaults.hpp"
#include "server/mcp/mcp_endpoint.hpp"
#include "server/tools/standard_tools.hpp"

namespace sandgate::server::testing {
using nlohmann::json;

struct Transport {
  boost::asio::io_context io;
  Config config = [] {
    Config c;
    c.tenants.max_sessions = 2;
    // The cap's refusal is what these tests look at (eviction: tests/integration/session_cap).
    c.registry.at_session_cap = session::AtSessionCap::refuse;
    return c;
  }();
  auth::TokenStore tokens = auth::TokenStore::parse(
      auth::to_hex(auth::sha256("tok-a")) + " a\n" + auth::to_hex(auth::sha256("tok-b")) + " b\n",
      tenant_defaults(config));
  sandbox::SandboxHost host{io.get_executor(), config.host};
  session::CallSlots slots{4, 4};
  session::Registry registry{io.get_executor(), config.registry, host, slots};
  Metrics metrics;
  ToolRegistry tools = [this] {
    ToolRegistry t;
    add_standard_tools(t, effective_tool_limits(config), registry, metrics);
    return t;
  }();
  McpEndpoint endpoint{mcp_endpoint_config(config), &tokens, nullptr, registry, tools, metrics};

  ~Transport() {
    registry.end_all();
    host.shutdown();
    io.run_for(std::chrono::milliseconds(50));
  }

  Response send(http::verb verb, std::string body, std::map<std::string, std::string> headers = {},
                bool default_headers = true) {
    Request req{verb, "/mcp", 11};
    if (default_headers) {
      req.set(http::field::host, "127.0.0.1:8080");
      req.set(http::field::authorization, "Bearer tok-a");
      req.set(http::field::content_type, "application/json");
      req.set(http::field::accept, "application/json, text/event-stream");
    }
    for (auto& [k, v] : headers) {
      if (v.empty())
        req.erase(k);
      else
        req.set(k, v);
    }
    req.body() = std::move(body);
    req.prepare_payload();
    auto f = boost::asio::co_spawn(io, endpoint.handle(req, std::make_shared<CancelSignal>()),
                                   boost::asio::use_future);
    io.restart();
    while (f.wait_for(std::chrono::seconds(0)) != std::future_status::ready) io.run_one();
    return f.get().response;
  }

  Response post(json message, std::map<std::string, std::string> headers = {}) {
    return send(http::verb::post, message.dump(), std::move(headers));
  }

  std::string initialize(const std::string& token = "tok-a") {
    auto res = post({{"jsonrpc", "2.0"},
                     {"id", 1},
                     {"method", "initialize"},
                     {"params",
                      {{"protocolVersion", "2025-11-25"},
                       {"capabilities", json::object()},
                       {"clientInfo", {{"name", "t"}, {"version", "1"}}}}}},
                    {{"Authorization", "Bearer " + token}});
    REQUIRE(res.result() == http::status::ok);
    return std::string(res["Mcp-Session-Id"]);
  }
};

inline json body_of(const Response& r) {
  return json::parse(r.body());
}
inline json request(int id, const std::string& method, json params = json::object()) {
  return {{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", params}};
}

}  // namespace sandgate::server::testing
