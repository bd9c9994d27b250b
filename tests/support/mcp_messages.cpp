#include "tests/support/mcp_messages.hpp"

namespace sandgate::test {

Headers mcp_headers(const std::string& session, const std::string& token) {
  Headers h = {{"Content-Type", "application/json"},
               {"Accept", "application/json, text/event-stream"},
               {"Authorization", "Bearer " + token}};
  if (!session.empty()) {
    h["Mcp-Session-Id"] = session;
    h["MCP-Protocol-Version"] = kSessionRevision;
  }
  return h;
}

json initialize_message(int id, const std::string& client_name) {
  return {{"jsonrpc", "2.0"},
          {"id", id},
          {"method", "initialize"},
          {"params",
           {{"protocolVersion", kSessionRevision},
            {"capabilities", json::object()},
            {"clientInfo", {{"name", client_name}, {"version", "1"}}}}}};
}

json initialized_notification() {
  return {{"jsonrpc", "2.0"}, {"method", "notifications/initialized"}};
}

json tool_call_message(int id, const std::string& tool, json arguments) {
  return {{"jsonrpc", "2.0"},
          {"id", id},
          {"method", "tools/call"},
          {"params", tool_call_params(tool, std::move(arguments))}};
}

json tool_call_params(const std::string& tool, json arguments) {
  return {{"name", tool}, {"arguments", std::move(arguments)}};
}

json as_task(json message, json task) {
  message["params"]["task"] = std::move(task);
  return message;
}

json with_progress_token(json message, json token) {
  message["params"]["_meta"]["progressToken"] = std::move(token);
  return message;
}

json execute_arguments(const std::string& code, const std::string& language, int timeout_seconds) {
  json arguments = execute_arguments(code, language);
  arguments["timeout_seconds"] = timeout_seconds;
  return arguments;
}

json execute_arguments(const std::string& code, const std::string& language) {
  return {{"code", code}, {"language", language}};
}

json stateless_message(const std::string& method, json params, int id) {
  params["_meta"] = {{"io.modelcontextprotocol/protocolVersion", kStatelessRevision},
                     {"io.modelcontextprotocol/clientCapabilities", json::object()}};
  return {{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", std::move(params)}};
}

json stateless_tool_call(const std::string& tool, json arguments, int id) {
  return stateless_message("tools/call", tool_call_params(tool, std::move(arguments)), id);
}

Headers stateless_headers(const json& message, const std::string& token) {
  auto h = mcp_headers({}, token);
  h["MCP-Protocol-Version"] = kStatelessRevision;
  h["Mcp-Method"] = message["method"];
  if (message["params"].contains("name")) h["Mcp-Name"] = message["params"]["name"];
  return h;
}

}  // namespace sandgate::test
