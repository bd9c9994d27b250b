#include "gateway_process.hpp"

#include <spawn.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <cctype>

extern char** environ;

namespace sandgate::test {

int free_port() {
  boost::asio::io_context io;
  boost::asio::ip::tcp::acceptor a(io, {boost::asio::ip::make_address("127.0.0.1"), 0});
  return a.local_endpoint().port();
}

std::vector<std::string> own_cgroup_wrapper(const std::string& name) {
  const char* parent = std::getenv("SANDGATE_TEST_CGROUP_PARENT");
  if (!parent) return {};
  return {"/bin/sh", "-c",
          "d=\"$0/${1:-gw-$$}\"; shift; mkdir -p \"$d\" || exit 1; "
          "if [ -d \"$d/sandgate-gateway\" ]; then d=\"$d/sandgate-gateway\"; fi; "
          "echo 0 > \"$d/cgroup.procs\" && exec \"$@\"",
          parent, name};
}

GatewayProcess::GatewayProcess(std::vector<std::string> args, std::vector<std::string> env,
                               bool tls, std::vector<std::string> wrapper) {
  int out[2];
  REQUIRE(::pipe(out) == 0);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out[1], 1);
  posix_spawn_file_actions_addclose(&actions, out[0]);
  std::string cgroup_name;
  for (const auto& e : env)
    if (e.rfind("SANDGATE_TEST_CGROUP=", 0) == 0) cgroup_name = e.substr(21);
  std::vector<std::string> argv_s = own_cgroup_wrapper(cgroup_name);
  argv_s.insert(argv_s.end(), wrapper.begin(), wrapper.end());
  for (std::string a : {SANDGATE_BINARY, "--listen", "127.0.0.1:0", "--log-level", "warn"})
    argv_s.push_back(a);
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv, envp;
  for (auto& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);
  for (auto& e : env) envp.push_back(e.data());
  std::string path = "PATH=/usr/bin:/bin";
  envp.push_back(path.data());
  envp.push_back(nullptr);
  REQUIRE(posix_spawn(&pid_, argv_s[0].c_str(), &actions, nullptr, argv.data(), envp.data()) == 0);
  posix_spawn_file_actions_destroy(&actions);
  ::close(out[1]);
  // First stdout line: "sandgate listening on http://127.0.0.1:PORT/mcp"
  std::string line;
  char c;
  while (::read(out[0], &c, 1) == 1 && c != '\n') line += c;
  ::close(out[0]);
  auto colon = line.rfind(':');
  if (colon != std::string::npos) port_ = std::atoi(line.c_str() + colon + 1);
  if (port_ <= 0) give_up("the gateway did not say where it listens (its stdout: " + line + ")");
  if (!tls) wait_ready();
}

GatewayProcess::~GatewayProcess() {
  if (pid_ > 0 && stop(SIGTERM) < 0) stop(SIGKILL);
}

int GatewayProcess::stop(int sig, std::chrono::seconds limit) {
  ::kill(pid_, sig);
  auto deadline = std::chrono::steady_clock::now() + limit;
  int status = 0;
  while (std::chrono::steady_clock::now() < deadline) {
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return -1;
}

HttpReply GatewayProcess::request(http::verb verb, const std::string& target,
                                  const std::string& body,
                                  std::map<std::string, std::string> headers) {
  boost::asio::io_context io;
  boost::beast::tcp_stream stream(io);
  stream.expires_after(std::chrono::seconds(60));
  stream.connect(boost::asio::ip::tcp::endpoint(boost::asio::ip::make_address("127.0.0.1"),
                                                static_cast<unsigned short>(port_)));
  http::request<http::string_body> req{verb, target, 11};
  req.set(http::field::host, "127.0.0.1:" + std::to_string(port_));
  for (auto& [k, v] : headers) req.set(k, v);
  req.body() = body;
  req.prepare_payload();
  http::write(stream, req);
  boost::beast::flat_buffer buffer;
  http::response_parser<http::string_body> parser;
  parser.body_limit(64 << 20);
  http::read(stream, buffer, parser);
  HttpReply reply;
  reply.status = parser.get().result_int();
  for (const auto& f : parser.get()) {
    std::string name(f.name_string());
    for (auto& ch : name) ch = static_cast<char>(std::tolower(ch));
    reply.headers[name] = std::string(f.value());
  }
  reply.body = parser.get().body();
  return reply;
}

std::map<std::string, std::string> GatewayProcess::mcp_headers(const std::string& session,
                                                               const std::string& token) {
  std::map<std::string, std::string> h = {{"Content-Type", "application/json"},
                                          {"Accept", "application/json, text/event-stream"},
                                          {"Authorization", "Bearer " + token}};
  if (!session.empty()) {
    h["Mcp-Session-Id"] = session;
    h["MCP-Protocol-Version"] = "2025-11-25";
  }
  return h;
}

HttpReply GatewayProcess::post(const json& message, const std::string& session,
                               const std::string& token) {
  return request(http::verb::post, "/mcp", message.dump(), mcp_headers(session, token));
}

std::string GatewayProcess::initialize(const std::string& token) {
  auto r = post({{"jsonrpc", "2.0"},
                 {"id", 0},
                 {"method", "initialize"},
                 {"params",
                  {{"protocolVersion", "2025-11-25"},
                   {"capabilities", json::object()},
                   {"clientInfo", {{"name", "it"}, {"version", "1"}}}}}},
                {}, token);
  REQUIRE(r.status == 200);
  std::string id = r.headers["mcp-session-id"];
  REQUIRE(post({{"jsonrpc", "2.0"}, {"method", "notifications/initialized"}}, id, token).status ==
          202);
  return id;
}

json GatewayProcess::stateless_message(const std::string& method, json params, int id) {
  params["_meta"] = {{"io.modelcontextprotocol/protocolVersion", "2026-07-28"},
                     {"io.modelcontextprotocol/clientCapabilities", json::object()}};
  return {{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", std::move(params)}};
}

std::map<std::string, std::string> GatewayProcess::stateless_headers(const json& message,
                                                                     const std::string& token) {
  auto h = mcp_headers({}, token);
  h["MCP-Protocol-Version"] = "2026-07-28";
  h["Mcp-Method"] = message["method"];
  if (message["params"].contains("name")) h["Mcp-Name"] = message["params"]["name"];
  return h;
}

json GatewayProcess::call_stateless(const std::string& tool, json arguments,
                                    const std::string& token) {
  json message = stateless_message("tools/call", {{"name", tool}, {"arguments", arguments}});
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
  boost::asio::io_context io;
  boost::beast::tcp_stream stream(io);
  stream.connect(boost::asio::ip::tcp::endpoint(boost::asio::ip::make_address("127.0.0.1"),
                                                static_cast<unsigned short>(port_)));
  http::request<http::string_body> req{http::verb::post, "/mcp", 11};
  req.set(http::field::host, "127.0.0.1:" + std::to_string(port_));
  for (const auto& [k, v] : headers) req.set(k, v);
  req.body() = message.dump();
  req.prepare_payload();
  http::write(stream, req);
  return eventually(until, limit);
}

HttpReply GatewayProcess::call_execute(const std::string& session, const std::string& code,
                                       const std::string& language, int timeout_s, int id) {
  return post(
      {{"jsonrpc", "2.0"},
       {"id", id},
       {"method", "tools/call"},
       {"params",
        {{"name", "execute"},
         {"arguments", {{"code", code}, {"language", language}, {"timeout_seconds", timeout_s}}}}}},
      session);
}

json GatewayProcess::execute(const std::string& session, const std::string& code,
                             const std::string& language, int timeout_s, int id) {
  auto r = call_execute(session, code, language, timeout_s, id);
  REQUIRE(r.status == 200);
  return r.json_body()["result"];
}

void GatewayProcess::wait_ready() {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < deadline) {
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      FAIL("the gateway exited while starting, status " << status);
    }
    try {
      if (request(http::verb::get, "/readyz").status == 200) return;
    } catch (const std::exception&) {
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  give_up("the gateway did not become ready within 60 s");
}

void GatewayProcess::give_up(const std::string& why) {
  if (pid_ > 0) stop(SIGKILL);
  FAIL(why);
  std::abort();  // FAIL throws; this only tells the compiler
}

}  // namespace sandgate::test
