#include "bench/load/mcp_client.hpp"

#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/http.hpp>

namespace sandgate::bench {

namespace http = boost::beast::http;
using asio::use_awaitable;

namespace {

constexpr const char* kProtocolVersion = "2025-11-25";

// The JSON-RPC response carried by an SSE stream: the last `data:` event that has an id.
std::optional<json> response_in_event_stream(const std::string& body) {
  std::optional<json> found;
  std::size_t at = 0;
  while ((at = body.find("data:", at)) != std::string::npos) {
    auto end = body.find('\n', at);
    auto data = body.substr(at + 5, end == std::string::npos ? std::string::npos : end - at - 5);
    auto message = json::parse(data, nullptr, false);
    if (!message.is_discarded() && message.contains("id")) found = std::move(message);
    at = end == std::string::npos ? body.size() : end;
  }
  return found;
}

}  // namespace

McpClient::McpClient(asio::any_io_executor executor, asio::ip::tcp::endpoint server,
                     std::string token)
    : server_(server), token_(std::move(token)), stream_(executor) {}

asio::awaitable<void> McpClient::ensure_connected() {
  if (connected_) co_return;
  stream_.expires_after(std::chrono::seconds(30));
  co_await stream_.async_connect(server_, use_awaitable);
  stream_.socket().set_option(asio::ip::tcp::no_delay(true));
  buffer_.clear();
  connected_ = true;
  reused_ = false;
}

asio::awaitable<McpClient::Reply> McpClient::send(const std::string& method,
                                                  const std::string& session,
                                                  const std::string& body) {
  co_return co_await send(method, session, body, token_);
}

asio::awaitable<McpClient::Reply> McpClient::send(
    const std::string& method, const std::string& session, const std::string& body,
    const std::string& token, const std::vector<std::pair<std::string, std::string>>& extra) {
  co_await ensure_connected();
  http::request<http::string_body> request{
      method == "DELETE" ? http::verb::delete_ : http::verb::post, "/mcp", 11};
  request.set(http::field::host,
              server_.address().to_string() + ":" + std::to_string(server_.port()));
  if (!token.empty()) request.set(http::field::authorization, "Bearer " + token);
  request.set(http::field::accept, "application/json, text/event-stream");
  if (!session.empty()) {
    request.set("Mcp-Session-Id", session);
    request.set("MCP-Protocol-Version", kProtocolVersion);
  }
  if (!body.empty()) request.set(http::field::content_type, "application/json");
  for (const auto& [name, value] : extra) request.set(name, value);
  request.body() = body;
  request.prepare_payload();

  // A call may legitimately run long (the output flood); the deadline only guards a wedge.
  http::response_parser<http::string_body> parser;
  parser.body_limit(64 << 20);
  // A kept-alive connection may have been closed by the server while idle (its keep-alive
  // limit): then, and only then (no byte of an answer came), the request goes once more on a
  // fresh connection, as HTTP clients do.
  for (bool reused = reused_;; reused = false) {
    stream_.expires_after(std::chrono::seconds(300));
    bool closed_while_idle = false;
    try {
      co_await http::async_write(stream_, request, use_awaitable);
      co_await http::async_read(stream_, buffer_, parser, use_awaitable);
      break;
    } catch (const boost::system::system_error& e) {
      connected_ = false;
      stream_.socket().close();
      closed_while_idle =
          reused && !parser.got_some() &&
          (e.code() == http::error::end_of_stream || e.code() == asio::error::connection_reset ||
           e.code() == asio::error::broken_pipe || e.code() == asio::error::eof);
      if (!closed_while_idle) throw;
    } catch (...) {
      connected_ = false;
      stream_.socket().close();
      throw;
    }
    co_await ensure_connected();
  }
  reused_ = true;
  auto& response = parser.get();
  if (!response.keep_alive()) {
    connected_ = false;
    boost::system::error_code ignored;
    stream_.socket().close(ignored);
  }
  Reply reply;
  reply.status = response.result_int();
  if (auto id = response.find("Mcp-Session-Id"); id != response.end())
    reply.session_id = std::string(id->value());
  const auto& text = response.body();
  bool event_stream = response[http::field::content_type].starts_with("text/event-stream");
  if (event_stream) {
    reply.message = response_in_event_stream(text);
  } else if (!text.empty()) {
    auto message = json::parse(text, nullptr, false);
    if (!message.is_discarded()) reply.message = std::move(message);
  }
  co_return reply;
}

asio::awaitable<std::string> McpClient::initialize() {
  json request = {{"jsonrpc", "2.0"},
                  {"id", next_id_++},
                  {"method", "initialize"},
                  {"params",
                   {{"protocolVersion", kProtocolVersion},
                    {"capabilities", json::object()},
                    {"clientInfo", {{"name", "sandgate-load"}, {"version", "1"}}}}}};
  auto reply = co_await send("POST", {}, request.dump());
  if (reply.status != 200 || reply.session_id.empty() || !reply.message ||
      !reply.message->contains("result"))
    throw McpFailure("initialize: HTTP " + std::to_string(reply.status));
  json initialized = {{"jsonrpc", "2.0"}, {"method", "notifications/initialized"}};
  auto ack = co_await send("POST", reply.session_id, initialized.dump());
  if (ack.status != 202) throw McpFailure("initialized: HTTP " + std::to_string(ack.status));
  co_return reply.session_id;
}

namespace {
// The CallToolResult of a tools/call reply; McpFailure for an HTTP error or a tool error.
json tool_result(const McpClient::Reply& reply, const std::string& what) {
  if (reply.status != 200 || !reply.message || !reply.message->contains("result"))
    throw McpFailure(what + ": HTTP " + std::to_string(reply.status));
  json result = (*reply.message)["result"];
  if (result.value("isError", false)) throw McpFailure(what + ": tool error");
  return result;
}
}  // namespace

asio::awaitable<json> McpClient::execute(const std::string& session, const std::string& language,
                                         const std::string& code, int timeout_seconds, bool fresh) {
  json arguments = {{"code", code}, {"language", language}, {"timeout_seconds", timeout_seconds}};
  if (fresh) arguments["fresh"] = true;
  json request = {{"jsonrpc", "2.0"},
                  {"id", next_id_++},
                  {"method", "tools/call"},
                  {"params", {{"name", "execute"}, {"arguments", arguments}}}};
  co_return tool_result(co_await send("POST", session, request.dump()), "tools/call");
}

asio::awaitable<json> McpClient::execute_stateless(const std::string& sandbox_id,
                                                   const std::string& language,
                                                   const std::string& code) {
  json arguments = {{"code", code}, {"language", language}};
  if (!sandbox_id.empty()) arguments["sandbox_id"] = sandbox_id;
  json request = {{"jsonrpc", "2.0"},
                  {"id", next_id_++},
                  {"method", "tools/call"},
                  {"params",
                   {{"name", "execute"},
                    {"arguments", std::move(arguments)},
                    {"_meta",
                     {{"io.modelcontextprotocol/protocolVersion", "2026-07-28"},
                      {"io.modelcontextprotocol/clientCapabilities", json::object()}}}}}};
  // Built before the co_await: GCC 12 cannot take a braced list inside that expression.
  const std::vector<std::pair<std::string, std::string>> headers = {
      {"MCP-Protocol-Version", "2026-07-28"},
      {"Mcp-Method", "tools/call"},
      {"Mcp-Name", "execute"}};
  co_return tool_result(co_await send("POST", {}, request.dump(), token_, headers),
                        "tools/call (2026-07-28)");
}

asio::awaitable<void> McpClient::end(const std::string& session) {
  auto reply = co_await send("DELETE", session, {});
  if (reply.status < 200 || reply.status > 299)
    throw McpFailure("DELETE: HTTP " + std::to_string(reply.status));
}

}  // namespace sandgate::bench
