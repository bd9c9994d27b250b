// Fuzz target: the HTTP request path in memory. Bytes go through Beast's request parser with the
// server's own limits; the headers alone go through the Router's admission rules first (as the
// connection does before it reads a body), then the whole request through the Router: the /mcp
// endpoint's Origin/Host/token/Accept/session/version rules, JSON-RPC, the MCP methods and the
// execute argument checks. The reply is serialized as the server would write it. No socket and
// no sandbox: the host allows zero sandboxes, so a valid execute gets its "Sandbox unavailable"
// tool error.
//
// "@SID@" in an input is replaced by the id of a live session, so the fuzzer reaches the
// session-bound paths (tools/list, tools/call, DELETE) without guessing a 128-bit id.
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/beast/http.hpp>
#include <cstdlib>
#include <sstream>

#include "auth/token_store.hpp"
#include "common/logging.hpp"
#include "sandbox/host.hpp"
#include "server/gateway/config.hpp"
#include "server/gateway/tenant_defaults.hpp"
#include "server/http/router.hpp"
#include "server/mcp/mcp_endpoint.hpp"
#include "server/tools/standard_tools.hpp"
#include "session/registry.hpp"

namespace asio = boost::asio;
namespace http = boost::beast::http;
using namespace sandgate;

namespace {

// Every event written by a streamed reply, as the connection would write them.
class CollectingSink final : public server::EventSink {
 public:
  asio::awaitable<bool> send(const nlohmann::json& data) override {
    written += data.dump(-1, ' ', false, nlohmann::json::error_handler_t::strict);
    co_return true;
  }
  asio::awaitable<bool> send_serialized(std::string message) override {
    written += message;
    co_return true;
  }
  asio::awaitable<bool> prime() override { co_return true; }
  asio::awaitable<bool> raw(std::string bytes) override {
    written += bytes;
    co_return true;
  }
  std::string written;
};

sandbox::HostConfig no_sandboxes() {
  sandbox::HostConfig c;
  c.max_sandboxes = 0;
  return c;
}

struct World {
  asio::io_context io;
  server::Config config = [] {
    server::Config c;
    c.tools.progress_interval = std::chrono::seconds(1);
    return c;
  }();
  auth::TokenStore tokens = auth::TokenStore::single("fuzz-token", server::tenant_defaults(config));
  sandbox::SandboxHost host{io.get_executor(), no_sandboxes()};
  session::CallSlots slots{config.calls.max_concurrent, config.calls.max_queued};
  session::Registry registry{io.get_executor(), config.registry, host, slots};
  server::Metrics metrics;
  server::ToolRegistry tools = [this] {
    server::ToolRegistry t;
    server::add_standard_tools(t, server::effective_tool_limits(config), registry, metrics);
    return t;
  }();
  server::McpEndpoint endpoint{
      server::mcp_endpoint_config(config), &tokens, nullptr, registry, tools, metrics};
  server::Router router{endpoint, metrics, [] { return server::Gauges{}; }};
  std::string session_id;

  World() {
    auto created = registry.create(tokens.find_tenant("default"));
    session_id = std::get<std::shared_ptr<session::Session>>(created)->id();
  }

  std::optional<server::Response> admit(const server::Request& head) {
    std::optional<std::optional<server::Response>> refusal;
    asio::co_spawn(io, router.admit(head),
                   [&](std::exception_ptr e, std::optional<server::Response> r) {
                     if (e) std::abort();  // admission answers every request; it never throws
                     refusal = std::move(r);
                   });
    while (!refusal) io.run_one();
    return std::move(*refusal);
  }

  server::Reply route(const server::Request& request) {
    std::optional<server::Reply> reply;
    asio::co_spawn(io, router.route(request, std::make_shared<sandgate::CancelSignal>()),
                   [&](std::exception_ptr e, server::Reply r) {
                     if (e) std::abort();  // the router answers every request; it never throws
                     reply = std::move(r);
                   });
    while (!reply) io.run_one();
    return std::move(*reply);
  }

  void stream(server::Reply& reply) {
    CollectingSink sink;
    bool done = false;
    asio::co_spawn(io, reply.stream(sink), [&](std::exception_ptr e) {
      if (e) std::abort();
      done = true;
    });
    while (!done) io.run_one();
  }
};

World& world() {
  static World* w = [] {
    sandgate::init_logging("error");
    return new World();
  }();
  return *w;
}

std::string with_session(std::string text, const std::string& id) {
  for (std::size_t at; (at = text.find("@SID@")) != std::string::npos;) text.replace(at, 5, id);
  return text;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  World& w = world();
  std::string input =
      with_session(std::string(reinterpret_cast<const char*>(data), size), w.session_id);
  http::request_parser<http::string_body> parser;
  parser.header_limit(16 * 1024);
  parser.body_limit(server::effective_body_limit(w.config));
  boost::system::error_code ec;
  // The headers first, as the connection reads them: the admission rules (Origin/Host, token,
  // method) see them before any body exists, and a refusal is all the connection writes.
  asio::const_buffer rest = asio::buffer(input);
  std::size_t used = parser.put(rest, ec);
  if (ec || !parser.is_header_done()) return 0;  // the server answers 413/431 or closes
  if (auto refusal = w.admit(parser.get())) {
    int status = refusal->result_int();
    if (status < 400 || status > 499) std::abort();  // only refusals come from here
    std::ostringstream wire;
    wire << *refusal;
    return 0;
  }
  rest += used;
  parser.eager(true);
  if (!parser.is_done() && rest.size() > 0)
    used = parser.put(rest, ec);
  else
    used = 0;
  if (!ec && !parser.is_done() && used == rest.size()) parser.put_eof(ec);
  if (ec || !parser.is_done()) return 0;  // the server answers 400/413 or closes

  auto reply = w.route(parser.release());
  int status = reply.response.result_int();
  if (status < 100 || status > 599) std::abort();
  if (reply.stream) w.stream(reply);
  std::ostringstream wire;
  wire << reply.response;  // what the connection writes

  // A session that this input created is ended again, so sessions do not pile up.
  auto created = reply.response["Mcp-Session-Id"];
  if (!created.empty() && created != w.session_id)
    w.registry.remove(std::string(created), "default");
  if (!w.registry.find(w.session_id, "default")) {  // the input deleted it: open another
    auto again = w.registry.create(w.tokens.find_tenant("default"));
    w.session_id = std::get<std::shared_ptr<session::Session>>(again)->id();
  }
  return 0;
}
