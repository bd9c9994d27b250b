// The gateway as an MCP client of real upstreams (upstream/mcp_client, upstream/tool_catalog;
// issue #45): @modelcontextprotocol/server-everything, and a bearer-token upstream made with the
// official SDKs in both protocol eras (tests/support/upstream_server.mjs). What an upstream saw
// is asserted from its side (its events file): a cancelled call, a refused elicitation, the one
// negotiation of a client, the one tool list of many catalog readers.
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_future.hpp>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <future>
#include <set>
#include <thread>

#include "tests/integration/test_upstreams.hpp"
#include "tests/support/skip.hpp"
#include "upstream/definition.hpp"
#include "upstream/mcp_client.hpp"
#include "upstream/tool_catalog.hpp"

namespace asio = boost::asio;
using namespace sandgate::upstream;
using namespace sandgate::test;
using nlohmann::json;
using Clock = std::chrono::steady_clock;
using Kind = UpstreamError::Kind;

namespace {

// Two threads running the clients' coroutines (a sandboxed program's calls come from several).
struct Loop {
  asio::io_context io;
  asio::executor_work_guard<asio::io_context::executor_type> work = asio::make_work_guard(io);
  std::vector<std::thread> threads;
  Loop() {
    for (int i = 0; i < 2; ++i) threads.emplace_back([this] { io.run(); });
  }
  ~Loop() {
    work.reset();
    io.stop();
    for (auto& t : threads) t.join();
  }
  template <class T>
  T run(asio::awaitable<T> a) {
    return asio::co_spawn(io, std::move(a), asio::use_future).get();
  }
};

// A folder of this test's own: the token file, the upstreams file, the events file.
struct Dir {
  std::filesystem::path path;
  explicit Dir(const std::string& name)
      : path(std::filesystem::temp_directory_path() /
             ("sandgate-upstream-" + std::to_string(::getpid()) + "-" + name)) {
    std::filesystem::remove_all(path);
    std::filesystem::create_directories(path);
  }
  ~Dir() { std::filesystem::remove_all(path); }
  std::filesystem::path write(const std::string& name, const std::string& text,
                              mode_t mode = 0600) const {
    auto p = path / name;
    {
      std::ofstream f(p, std::ios::trunc);
      f << text;
    }
    ::chmod(p.c_str(), mode);
    return p;
  }
};

std::shared_ptr<const UpstreamDefinition> define(const std::string& json_text) {
  auto set = parse_upstreams(json_text);
  REQUIRE(set.size() == 1);
  return set.begin()->second;
}

std::string url_of(const ServerProcess& p) {
  return "http://127.0.0.1:" + std::to_string(p.port()) + "/mcp";
}

Clock::time_point in(std::chrono::milliseconds ms) {
  return Clock::now() + ms;
}
constexpr auto kGenerous = std::chrono::seconds(30);

std::string text_of(const json& result) {
  std::string out;
  if (result.contains("content"))
    for (const auto& c : result["content"])
      if (c.value("type", "") == "text") out += c.value("text", "");
  return out;
}

// The error a request ended with (REQUIREs that it ended with one).
template <class F>
UpstreamError error_of(F&& f) {
  try {
    f();
  } catch (const UpstreamError& e) {
    return e;
  }
  FAIL("the request did not fail");
  throw std::logic_error("unreachable");
}

bool need_node() {
  auto missing = node_modules_missing();
  if (missing.empty()) return true;
  skip_test("node_modules", missing);
  return false;
}

// A bearer-token upstream in `era` and the definition that reaches it with `token`.
struct SdkUpstream {
  Dir dir;
  std::filesystem::path events;
  std::unique_ptr<ServerProcess> process;
  std::shared_ptr<const UpstreamDefinition> definition;
  SdkUpstream(const std::string& era, const std::string& name, const std::string& extra = "",
              const std::string& token_given = "the-right-token")
      : dir(name), events(dir.path / "events.jsonl") {
    auto expected = dir.write("expected-token", "the-right-token\n");
    process = start_test_upstream(era, expected, events);
    auto given = dir.write("token", token_given + "\n");
    definition = define(R"({"sdk": {"url": ")" + url_of(*process) +
                        R"(", "headers": {"Authorization": {"file": ")" + given.string() +
                        R"(", "prefix": "Bearer "}})" + extra + "}}");
  }
  std::size_t count(const std::string& event) const {
    std::size_t n = 0;
    for (auto& e : upstream_events(events))
      if (e.is_object() && e.value("event", "") == event) ++n;
    return n;
  }
};

}  // namespace

TEST_CASE("server-everything: negotiated in the 2025 era, its tools listed and called",
          "[integration][upstream]") {
  if (!need_node()) return;
  auto everything = start_everything();
  Loop loop;
  auto definition = define(R"({"everything": {"url": ")" + url_of(*everything) +
                           R"(", "tools": ["echo", "get-sum", "get-structured-content",
                                           "get-tiny-image", "trigger-long-running-operation"]}})");
  auto client = McpClient::create(loop.io.get_executor(), definition);
  CHECK(client->protocol_version().empty());  // nothing sent before the first request

  auto list = loop.run(client->list_tools(in(kGenerous)));
  // server-everything answers server/discover as a 2025-era server: the client fell back.
  CHECK(client->protocol_version() == "2025-11-25");
  std::set<std::string> names;
  for (const auto& t : list.tools) names.insert(t.name);
  // Only the allowed tools, though it lists many more.
  CHECK(names == std::set<std::string>{"echo", "get-sum", "get-structured-content",
                                       "get-tiny-image", "trigger-long-running-operation"});
  CHECK(list.ttl == std::chrono::seconds(300));  // no ttlMs in 2025: the definition's
  for (const auto& t : list.tools) CHECK(t.input_schema.is_object());

  auto echo = loop.run(client->call_tool("echo", {{"message", "hello upstream"}}, in(kGenerous)));
  CHECK(text_of(echo.result) == "Echo: hello upstream");
  CHECK(echo.bytes > 0);
  auto sum = loop.run(client->call_tool("get-sum", {{"a", 2}, {"b", 40}}, in(kGenerous)));
  CHECK_THAT(text_of(sum.result), Catch::Contains("42"));
  auto structured = loop.run(
      client->call_tool("get-structured-content", {{"location", "New York"}}, in(kGenerous)));
  REQUIRE(structured.result.contains("structuredContent"));
  CHECK(structured.result["structuredContent"].is_object());
  CHECK(structured.result["structuredContent"].contains("temperature"));
  auto image = loop.run(client->call_tool("get-tiny-image", json::object(), in(kGenerous)));
  bool has_image = false;
  for (const auto& c : image.result["content"])
    if (c.value("type", "") == "image" && c.value("mimeType", "") == "image/png" &&
        !c.value("data", "").empty())
      has_image = true;
  CHECK(has_image);
  auto running = loop.run(client->call_tool("trigger-long-running-operation",
                                            {{"duration", 1}, {"steps", 2}}, in(kGenerous)));
  CHECK_THAT(text_of(running.result), Catch::Contains("completed"));
  // A tool error is the tool's outcome, not a failed request: get-sum given a string.
  auto bad = loop.run(client->call_tool("get-sum", {{"a", "two"}, {"b", 1}}, in(kGenerous)));
  CHECK(bad.result.value("isError", false));
  client->close();
}

TEST_CASE("an SDK upstream gets the gateway's bearer token, and a wrong one is a clear error",
          "[integration][upstream]") {
  if (!need_node()) return;
  SdkUpstream right("2025", "bearer");
  Loop loop;
  auto client = McpClient::create(loop.io.get_executor(), right.definition);
  auto echo = loop.run(client->call_tool("echo", {{"message", "with token"}}, in(kGenerous)));
  CHECK(text_of(echo.result) == "Echo: with token");
  CHECK(client->protocol_version() == "2025-11-25");
  CHECK(right.count("unauthorized") == 0);
  // Kept-alive connections: twenty calls in a row from a handful of client ports at most.
  for (int i = 0; i < 20; ++i)
    loop.run(client->call_tool("echo", {{"message", std::to_string(i)}}, in(kGenerous)));
  std::set<int> ports;
  for (auto& e : upstream_events(right.events))
    if (e.value("event", "") == "request") ports.insert(e.value("port", 0));
  CHECK(ports.size() <= 3);
  // Closing ends the session (DELETE, in the background).
  client->close();
  CHECK(wait_for_event(right.events, "session_closed", std::chrono::seconds(10)).has_value());
  CHECK(error_of([&] {
          loop.run(client->call_tool("echo", {{"message", "closed"}}, in(kGenerous)));
        }).kind() == Kind::unreachable);

  SdkUpstream wrong("2025", "bearer-wrong", "", "a-wrong-token");
  auto refused = McpClient::create(loop.io.get_executor(), wrong.definition);
  auto e = error_of([&] {
    loop.run(refused->call_tool("echo", {{"message", "x"}}, in(kGenerous)));
  });
  CHECK(e.kind() == Kind::unreachable);
  CHECK(std::string(e.what()) == "upstream 'sdk' refused the gateway's credentials (HTTP 401)");
  CHECK(wrong.count("unauthorized") >= 1);
}

TEST_CASE("an https upstream is verified against its CA file, and by its name",
          "[integration][upstream]") {
  if (!need_node()) return;
  Dir dir("tls");
  make_test_certificates(dir.path, "DNS:localhost");
  auto expected = dir.write("expected-token", "tls-token\n");
  auto process = start_test_upstream("2025", expected, dir.path / "events.jsonl", dir.path);
  const auto port = std::to_string(process->port());
  const auto ca = (dir.path / "ca.pem").string();
  auto definition = [&](const std::string& host, bool with_ca) {
    return define(R"({"tls": {"url": "https://)" + host + ":" + port +
                  R"(/mcp", "headers": {"Authorization": {"file": ")" + expected.string() +
                  R"(", "prefix": "Bearer "}})" +
                  (with_ca ? R"(, "ca_file": ")" + ca + "\"" : std::string()) + "}}");
  };
  Loop loop;
  auto trusted = McpClient::create(loop.io.get_executor(), definition("localhost", true));
  CHECK(text_of(loop.run(trusted->call_tool("echo", {{"message", "over TLS"}}, in(kGenerous)))
                    .result) == "Echo: over TLS");
  CHECK(trusted->protocol_version() == "2025-11-25");
  const std::string refused =
      "upstream 'tls' is unreachable: the TLS handshake or its certificate check failed";
  // The system's store does not know the throwaway CA.
  auto system_store = McpClient::create(loop.io.get_executor(), definition("localhost", false));
  auto e = error_of([&] { loop.run(system_store->list_tools(in(kGenerous))); });
  CHECK(e.kind() == Kind::unreachable);
  CHECK(std::string(e.what()) == refused);
  // The certificate names localhost, not 127.0.0.1.
  auto wrong_name = McpClient::create(loop.io.get_executor(), definition("127.0.0.1", true));
  auto n = error_of([&] { loop.run(wrong_name->list_tools(in(kGenerous))); });
  CHECK(n.kind() == Kind::unreachable);
  CHECK(std::string(n.what()) == refused);
}

TEST_CASE("a hung tool ends at the deadline, a 10 MB answer is refused, a tool error is an outcome",
          "[integration][upstream]") {
  if (!need_node()) return;
  SdkUpstream up("2025", "bounds");
  Loop loop;
  auto client = McpClient::create(loop.io.get_executor(), up.definition);
  loop.run(client->list_tools(in(kGenerous)));  // negotiated: the deadline below is the call's
  auto hung = error_of(
      [&] { loop.run(client->call_tool("hang", json::object(), in(std::chrono::seconds(2)))); });
  CHECK(hung.kind() == Kind::timeout);
  CHECK(std::string(hung.what()) == "upstream 'sdk' did not answer within 2 s");

  auto big = error_of([&] { loop.run(client->call_tool("big", json::object(), in(kGenerous))); });
  CHECK(big.kind() == Kind::too_large);
  CHECK(std::string(big.what()) == "upstream 'sdk' answered more than 4194304 bytes");

  auto failed = loop.run(client->call_tool("fail", json::object(), in(kGenerous)));
  CHECK(failed.result.value("isError", false));
  CHECK(text_of(failed.result) == "it failed on purpose");
  // The client still serves after each of those.
  CHECK(
      text_of(loop.run(client->call_tool("echo", {{"message", "still"}}, in(kGenerous))).result) ==
      "Echo: still");
  auto unknown =
      error_of([&] { loop.run(client->call_tool("no_such_tool", json::object(), in(kGenerous))); });
  CHECK(unknown.kind() == Kind::refused);
}

TEST_CASE("an upstream's elicitation request is refused and its call ends",
          "[integration][upstream]") {
  if (!need_node()) return;
  SdkUpstream up("2025", "elicit");
  Loop loop;
  auto client = McpClient::create(loop.io.get_executor(), up.definition);
  auto asked = loop.run(client->call_tool("ask", json::object(), in(kGenerous)));
  CHECK(asked.result.value("isError", false));
  CHECK_THAT(text_of(asked.result),
             Catch::Contains("sandgate's code mode does not support elicitation/create"));
  auto seen = wait_for_event(up.events, "elicitation_refused", std::chrono::seconds(5));
  REQUIRE(seen);
  CHECK_THAT((*seen)["message"].get<std::string>(),
             Catch::Contains("does not support elicitation/create"));
  CHECK(up.count("elicitation_answered") == 0);
}

TEST_CASE("a cancelled call tells the upstream (2025: notifications/cancelled)",
          "[integration][upstream]") {
  if (!need_node()) return;
  SdkUpstream up("2025", "cancel");
  Loop loop;
  auto client = McpClient::create(loop.io.get_executor(), up.definition);
  loop.run(client->list_tools(in(kGenerous)));
  asio::cancellation_signal signal;
  auto call = asio::co_spawn(loop.io, client->call_tool("hang", json::object(), in(kGenerous)),
                             asio::bind_cancellation_slot(signal.slot(), asio::use_future));
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  // The slot is the coroutine's: emitted on the loop, as the awaiting code would.
  std::promise<void> emitted;
  asio::post(loop.io, [&] {
    signal.emit(asio::cancellation_type::terminal);
    emitted.set_value();
  });
  emitted.get_future().get();
  REQUIRE(call.wait_for(std::chrono::seconds(10)) == std::future_status::ready);
  auto e = error_of([&] { call.get(); });
  CHECK(e.kind() == Kind::cancelled);
  auto aborted = wait_for_event(up.events, "hang_aborted", std::chrono::seconds(10));
  REQUIRE(aborted);
  CHECK((*aborted)["reason"] == "the caller cancelled the call");  // our notifications/cancelled
  CHECK(
      text_of(loop.run(client->call_tool("echo", {{"message", "after"}}, in(kGenerous))).result) ==
      "Echo: after");
}

TEST_CASE(
    "fifty concurrent calls on one client share one negotiation, and a lost session is renewed",
    "[integration][upstream]") {
  if (!need_node()) return;
  SdkUpstream up("2025", "concurrent");
  Loop loop;
  auto client = McpClient::create(loop.io.get_executor(), up.definition);
  std::vector<std::future<CallOutcome>> calls;
  for (int i = 0; i < 50; ++i)
    calls.push_back(asio::co_spawn(
        loop.io,
        client->call_tool("echo", {{"message", "call " + std::to_string(i)}}, in(kGenerous)),
        asio::use_future));
  for (int i = 0; i < 50; ++i)
    CHECK(text_of(calls[static_cast<std::size_t>(i)].get().result) ==
          "Echo: call " + std::to_string(i));
  CHECK(up.count("initialized") == 1);
  // A session the upstream forgot (404): a new one, once, and the call goes through.
  loop.run(client->call_tool("forget", json::object(), in(kGenerous)));
  CHECK(
      text_of(loop.run(client->call_tool("echo", {{"message", "again"}}, in(kGenerous))).result) ==
      "Echo: again");
  CHECK(up.count("initialized") == 2);
}

TEST_CASE("list_changed marks the client and the catalog fetches anew, once for many readers",
          "[integration][upstream]") {
  if (!need_node()) return;
  SdkUpstream up("2025", "catalog", R"(, "tools": ["echo", "change", "added"])");
  Loop loop;
  auto catalog = ToolCatalog::create(loop.io.get_executor(), up.definition);
  CHECK(&catalog->definition() == up.definition.get());
  std::vector<std::future<std::shared_ptr<const ToolList>>> readers;
  for (int i = 0; i < 10; ++i)
    readers.push_back(asio::co_spawn(loop.io, catalog->tools(in(kGenerous)), asio::use_future));
  std::shared_ptr<const ToolList> first;
  for (auto& r : readers) {
    auto list = r.get();
    if (!first) first = list;
    CHECK(list == first);  // one list, shared
  }
  CHECK(up.count("tools_list") == 1);
  std::vector<std::string> names;
  for (const auto& t : first->tools) names.push_back(t.name);
  CHECK(names == std::vector<std::string>{"echo", "change"});  // "added" does not exist yet
  // Kept: no new request while the ttl lasts.
  CHECK(loop.run(catalog->tools(in(kGenerous))) == first);
  CHECK(up.count("tools_list") == 1);

  auto client = McpClient::create(loop.io.get_executor(), up.definition);
  CHECK_FALSE(client->tools_changed());
  loop.run(client->call_tool("change", json::object(), in(kGenerous)));
  CHECK(client->tools_changed());  // seen on the call's own stream
  catalog->invalidate();           // what the channel does when a client saw it
  auto changed = loop.run(catalog->tools(in(kGenerous)));
  names.clear();
  for (const auto& t : changed->tools) names.push_back(t.name);
  CHECK(names == std::vector<std::string>{"echo", "change", "added"});
  CHECK(up.count("tools_list") == 2);
  loop.run(client->list_tools(in(kGenerous)));
  CHECK_FALSE(client->tools_changed());  // until the next list_tools
}

TEST_CASE("the 2026-07-28 era: discover, mirrored headers, cancellation by closing the stream",
          "[integration][upstream]") {
  if (!need_node()) return;
  SdkUpstream up("2026", "modern");
  Loop loop;
  auto client = McpClient::create(loop.io.get_executor(), up.definition);
  auto list = loop.run(client->list_tools(in(kGenerous)));
  CHECK(client->protocol_version() == "2026-07-28");
  json schema;
  for (const auto& t : list.tools)
    if (t.name == "headers") schema = t.input_schema;
  REQUIRE(schema.is_object());
  CHECK(
      text_of(loop.run(client->call_tool("echo", {{"message", "modern"}}, in(kGenerous))).result) ==
      "Echo: modern");

  auto seen =
      loop.run(client->call_tool("headers", {{"region", "eu-west"}}, in(kGenerous), schema));
  const auto& h = seen.result["structuredContent"];
  CHECK(h["method"] == "tools/call");
  CHECK(h["name"] == "headers");
  CHECK(h["region"] == "eu-west");
  CHECK(h["version"] == "2026-07-28");
  auto encoded =
      loop.run(client->call_tool("headers", {{"region", "Zürich"}}, in(kGenerous), schema));
  CHECK(encoded.result["structuredContent"]["region"] == "=?base64?WsO8cmljaA==?=");

  auto failed = loop.run(client->call_tool("fail", json::object(), in(kGenerous)));
  CHECK(failed.result.value("isError", false));
  auto big = error_of([&] { loop.run(client->call_tool("big", json::object(), in(kGenerous))); });
  CHECK(big.kind() == Kind::too_large);
  // Asking its client for input: sandgate declared no capability for it; the call ends either
  // way (the SDK refuses to ask, or sandgate refuses the input_required result).
  try {
    auto asked = loop.run(client->call_tool("ask", json::object(), in(kGenerous)));
    CHECK(asked.result.value("isError", false));
  } catch (const UpstreamError& e) {
    CHECK(e.kind() == Kind::refused);
  }
  CHECK(up.count("elicitation_answered") == 0);
  // 2026-07-28's own way to ask (an input_required result): the v2 SDK does not ask a client
  // that declared no elicitation capability (-32021); the call ends with that error.
  auto again =
      error_of([&] { loop.run(client->call_tool("ask_again", json::object(), in(kGenerous))); });
  CHECK(again.kind() == Kind::refused);
  CHECK_THAT(std::string(again.what()), Catch::Contains("elicitation/create"));

  asio::cancellation_signal signal;
  auto call = asio::co_spawn(loop.io, client->call_tool("hang", json::object(), in(kGenerous)),
                             asio::bind_cancellation_slot(signal.slot(), asio::use_future));
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  std::promise<void> emitted;
  asio::post(loop.io, [&] {
    signal.emit(asio::cancellation_type::terminal);
    emitted.set_value();
  });
  emitted.get_future().get();
  REQUIRE(call.wait_for(std::chrono::seconds(10)) == std::future_status::ready);
  CHECK(error_of([&] { call.get(); }).kind() == Kind::cancelled);
  // 2026-07-28 has no notifications/cancelled: the closed stream is the cancellation.
  CHECK(wait_for_event(up.events, "hang_aborted", std::chrono::seconds(10)).has_value());
}

TEST_CASE("an upstream that is down is unreachable, and http:// off loopback is refused",
          "[integration][upstream]") {
  Loop loop;
  // A port nothing listens on: bound, then closed.
  int port = 0;
  {
    asio::io_context io;
    asio::ip::tcp::acceptor a(io, {asio::ip::make_address("127.0.0.1"), 0});
    port = a.local_endpoint().port();
  }
  auto down =
      define(R"({"down": {"url": "http://127.0.0.1:)" + std::to_string(port) + R"(/mcp"}})");
  auto client = McpClient::create(loop.io.get_executor(), down);
  auto e = error_of([&] { loop.run(client->list_tools(in(kGenerous))); });
  CHECK(e.kind() == Kind::unreachable);
  CHECK(std::string(e.what()) == "upstream 'down' is unreachable: connection refused");
  // And again: a failed negotiation is tried anew, not remembered.
  CHECK(error_of([&] { loop.run(client->call_tool("x", json::object(), in(kGenerous))); }).kind() ==
        Kind::unreachable);
  CHECK_THROWS_WITH(parse_upstreams(R"({"remote": {"url": "http://mcp.example.com/mcp"}})"),
                    Catch::StartsWith("upstream 'remote': url: plain http:// is allowed only to a "
                                      "loopback host"));
}
