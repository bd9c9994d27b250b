#pragma once
// Requests and replies of the task tests (tasks_test.cpp, replicas_test.cpp): the JSON-RPC
// response in a reply, and a 2026-07-28 request whose client may declare the tasks extension.
#include <sstream>
#include <string>

#include "gateway_process.hpp"
#include "tests/support/mcp_messages.hpp"

namespace sandgate::test {

// The JSON-RPC response in a reply: the body itself, or the response among an event stream's
// messages (a tasks/result that waits streams its answer).
inline nlohmann::json response_of(const HttpReply& reply) {
  if (reply.headers.count("content-type") &&
      reply.headers.at("content-type").rfind("text/event-stream", 0) == 0) {
    std::istringstream lines(reply.body);
    nlohmann::json found;
    for (std::string line; std::getline(lines, line);) {
      if (line.rfind("data: ", 0) != 0 || line.size() <= 6) continue;
      auto message = nlohmann::json::parse(line.substr(6));
      if (message.contains("id") && (message.contains("result") || message.contains("error")))
        found = message;
    }
    return found;
  }
  return reply.json_body();
}

// A 2026-07-28 request; `tasks`: its client capabilities declare the tasks extension.
inline HttpReply post_2026(GatewayProcess& gw, const std::string& method, nlohmann::json params,
                           bool tasks, const std::string& token = "test-token") {
  auto message = GatewayProcess::stateless_message(method, std::move(params));
  if (tasks)
    message["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"] = {
        {"extensions", {{"io.modelcontextprotocol/tasks", nlohmann::json::object()}}}};
  auto headers = GatewayProcess::stateless_headers(message, token);
  if (message["params"].contains("taskId")) headers["Mcp-Name"] = message["params"]["taskId"];
  return gw.request(http::verb::post, "/mcp", message.dump(), headers);
}

// The params of a bash execute call.
inline nlohmann::json bash_call(const std::string& code, int timeout_s) {
  return tool_call_params("execute", execute_arguments(code, "bash", timeout_s));
}

}  // namespace sandgate::test
