#include "tests/support/mcp_client.hpp"

#include "tests/support/mcp_messages.hpp"

namespace sandgate::test {

namespace {

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
    : connection_(std::move(executor), server), token_(std::move(token)) {}

asio::awaitable<McpClient::Reply> McpClient::send(const std::string& method,
                                                  const std::string& session,
                                                  const std::string& body) {
  co_return co_await send(method, session, body, token_);
}

asio::awaitable<McpClient::Reply> McpClient::send(
    const std::string& method, const std::string& session, const std::string& body,
    const std::string& token, const std::vector<std::pair<std::string, std::string>>& extra) {
  // Unlike mcp_headers(): no Authorization without a token (the soak's unauthenticated
  // requests), no Content-Type without a body (DELETE).
  Headers headers = {{"Accept", "application/json, text/event-stream"}};
  if (!token.empty()) headers["Authorization"] = "Bearer " + token;
  if (!session.empty()) {
    headers["Mcp-Session-Id"] = session;
    headers["MCP-Protocol-Version"] = kSessionRevision;
  }
  if (!body.empty()) headers["Content-Type"] = "application/json";
  for (const auto& [name, value] : extra) headers[name] = value;
  auto response = co_await connection_.exchange(
      method == "DELETE" ? http::verb::delete_ : http::verb::post, "/mcp", body, headers);
  Reply reply;
  reply.status = response.status;
  if (auto id = response.headers.find("mcp-session-id"); id != response.headers.end())
    reply.session_id = id->second;
  bool event_stream = response.headers["content-type"].starts_with("text/event-stream");
  if (event_stream) {
    reply.message = response_in_event_stream(response.body);
  } else if (!response.body.empty()) {
    auto message = json::parse(response.body, nullptr, false);
    if (!message.is_discarded()) reply.message = std::move(message);
  }
  co_return reply;
}

asio::awaitable<std::string> McpClient::initialize() {
  json request = initialize_message(next_id_++, "sandgate-load");
  auto reply = co_await send("POST", {}, request.dump());
  if (reply.status != 200 || reply.session_id.empty() || !reply.message ||
      !reply.message->contains("result"))
    throw McpFailure("initialize: HTTP " + std::to_string(reply.status));
  auto ack = co_await send("POST", reply.session_id, initialized_notification().dump());
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
  json arguments = execute_arguments(code, language, timeout_seconds);
  if (fresh) arguments["fresh"] = true;
  json request = tool_call_message(next_id_++, "execute", std::move(arguments));
  co_return tool_result(co_await send("POST", session, request.dump()), "tools/call");
}

asio::awaitable<json> McpClient::execute_stateless(const std::string& sandbox_id,
                                                   const std::string& language,
                                                   const std::string& code) {
  json arguments = execute_arguments(code, language);
  if (!sandbox_id.empty()) arguments["sandbox_id"] = sandbox_id;
  json request = stateless_tool_call("execute", std::move(arguments), next_id_++);
  // Beside the client's own headers: the revision, method and tool mirrored (as
  // stateless_headers() has them). Built before the co_await: GCC 12 cannot take a braced list
  // inside that expression.
  const std::vector<std::pair<std::string, std::string>> headers = {
      {"MCP-Protocol-Version", kStatelessRevision},
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

}  // namespace sandgate::test
