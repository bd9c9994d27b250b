#include "gateway_process.hpp"

#include <sstream>

namespace sandgate::test {

GatewayProcess::GatewayProcess(std::vector<std::string> args, std::vector<std::string> env,
                               bool tls, std::vector<std::string> wrapper,
                               std::chrono::milliseconds ready_limit) {
  std::string cgroup_name;
  for (const auto& e : env)
    if (e.rfind("SANDGATE_TEST_CGROUP=", 0) == 0) cgroup_name = e.substr(21);
  auto argv = sandgate_command(SANDGATE_BINARY, args, wrapper, cgroup_name);
  env.push_back("PATH=/usr/bin:/bin");
  // A TLS listener cannot be probed over plain HTTP: the test waits for it itself.
  LaunchOptions options;
  if (!tls) options.ready_path = "/readyz";
  options.ready_limit = ready_limit;
  try {
    server_.emplace("the gateway", std::move(argv), std::move(env), options);
  } catch (const std::exception& e) {
    FAIL(e.what());
  }
}

HttpReply GatewayProcess::request(http::verb verb, const std::string& target,
                                  const std::string& body,
                                  std::map<std::string, std::string> headers) {
  return http_request(server_->endpoint(), verb, target, body, headers);
}

HttpReply GatewayProcess::post(const json& message, const std::string& session,
                               const std::string& token) {
  return request(http::verb::post, "/mcp", message.dump(), mcp_headers(session, token));
}

std::string GatewayProcess::initialize(const std::string& token) {
  auto r = post(initialize_message(0, "it"), {}, token);
  REQUIRE(r.status == 200);
  std::string id = r.headers["mcp-session-id"];
  REQUIRE(post(initialized_notification(), id, token).status == 202);
  return id;
}

json GatewayProcess::call_stateless(const std::string& tool, json arguments,
                                    const std::string& token) {
  json message = stateless_tool_call(tool, arguments);
  auto r = request(http::verb::post, "/mcp", message.dump(), stateless_headers(message, token));
  REQUIRE(r.status == 200);
  CHECK(r.headers.count("mcp-session-id") == 0);
  return r.json_body()["result"];
}

void GatewayProcess::post_and_close(const json& message,
                                    const std::map<std::string, std::string>& headers,
                                    std::chrono::milliseconds hold) {
  post_and_close_when(
      message, headers, [] { return false; }, hold);
}

bool GatewayProcess::post_and_close_when(const json& message,
                                         const std::map<std::string, std::string>& headers,
                                         const std::function<bool()>& until,
                                         std::chrono::milliseconds limit) {
  return send_and_hold(server_->endpoint(), http::verb::post, "/mcp", message.dump(), headers,
                       until, limit);
}

HttpReply GatewayProcess::call_execute(const std::string& session, const std::string& code,
                                       const std::string& language, int timeout_s, int id,
                                       const std::string& token) {
  return post(tool_call_message(id, "execute", execute_arguments(code, language, timeout_s)),
              session, token);
}

json GatewayProcess::execute(const std::string& session, const std::string& code,
                             const std::string& language, int timeout_s, int id,
                             const std::string& token) {
  auto r = call_execute(session, code, language, timeout_s, id, token);
  REQUIRE(r.status == 200);
  return r.json_body()["result"];
}

long metric(GatewayProcess& gw, const std::string& name) {
  std::istringstream metrics(gw.request(http::verb::get, "/metrics").body);
  for (std::string line; std::getline(metrics, line);)
    if (line.rfind(name + " ", 0) == 0) return std::stol(line.substr(name.size() + 1));
  return -1;
}

}  // namespace sandgate::test
