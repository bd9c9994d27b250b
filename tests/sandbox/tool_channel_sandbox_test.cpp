// A sandbox with a tool channel (Limits::tool_channel, issue #45): its programs reach the unix
// socket its supervisor handed over, through sandgate_tools (Python, JavaScript) and
// sandgate-tool (bash); the socket and the libraries are the sandbox's, read-only, and a sandbox
// without the channel has none of it. The gateway's end is played here by a small responder
// that answers every request with what it was asked (the gateway's own end is
// upstream/tool_channel, tested in the integration suite against real upstreams).
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <string>
#include <thread>

#include "sandbox_fixture.hpp"

using sandgate::sandbox::Language;

namespace {

sandgate::sandbox::HostConfig tool_config(bool egress = false) {
  auto config = sandgate::test::SandboxFixture::default_config();
  config.limits.tool_channel = true;
  config.limits.egress = egress;
  config.pool.size = 0;  // the pool builds sandboxes without a channel
  return config;
}

// Answers each HTTP request on `listener` with JSON naming its method, path and body: a /call
// gets a CallToolResult whose structured content echoes the request.
class Responder {
 public:
  explicit Responder(sandgate::UniqueFd listener)
      : listener_(std::move(listener)), thread_([this] { serve(); }) {}
  ~Responder() {
    stop_ = true;
    thread_.join();
  }

 private:
  void serve() {
    while (!stop_) {
      pollfd p{listener_.get(), POLLIN, 0};
      if (::poll(&p, 1, 50) <= 0) continue;
      sandgate::UniqueFd c(::accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC));
      if (!c) continue;
      std::string request;
      char buffer[4096];
      for (;;) {
        auto head_end = request.find("\r\n\r\n");
        if (head_end != std::string::npos) {
          auto at = request.find("Content-Length: ");
          std::size_t length = at == std::string::npos ? 0 : std::stoul(request.substr(at + 16));
          if (request.size() >= head_end + 4 + length) break;
        }
        ssize_t n = ::read(c.get(), buffer, sizeof buffer);
        if (n <= 0) break;
        request.append(buffer, static_cast<std::size_t>(n));
      }
      auto head_end = request.find("\r\n\r\n");
      std::string line = request.substr(0, request.find("\r\n"));
      std::string body = head_end == std::string::npos ? "" : request.substr(head_end + 4);
      std::string answer;
      if (line.rfind("POST /call ", 0) == 0) {
        answer =
            R"({"result":{"content":[{"type":"text","text":"ok"}],"structuredContent":{"asked":)" +
            body + "}}}";
      } else if (line.rfind("GET /list ", 0) == 0) {
        answer =
            R"({"servers":[{"name":"demo","description":"a demo","tools":[{"name":"echo","description":"Echoes.","inputSchema":{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}}]}]})";
      } else {
        answer = R"({"error":{"kind":"refused","message":"no such thing"}})";
      }
      std::string response =
          "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: " +
          std::to_string(answer.size()) + "\r\nConnection: close\r\n\r\n" + answer;
      (void)!::write(c.get(), response.data(), response.size());
    }
  }

  sandgate::UniqueFd listener_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace

TEST_CASE("a sandbox with a tool channel reaches it from Python, JavaScript and bash",
          "[sandbox][tool_channel]") {
  sandgate::test::SandboxFixture f(tool_config());
  if (!f.require_isolation()) return;
  auto sb = f.create();
  sandgate::UniqueFd listener = sb->take_tool_listener();
  REQUIRE(listener);
  CHECK_FALSE(sb->take_tool_listener());  // handed over once
  Responder responder(std::move(listener));

  auto python = f.run(sb, Language::python,
                      "import sandgate_tools\n"
                      "print(sandgate_tools.call('demo', 'echo', {'text': 'hi'}))\n"
                      "print(sandgate_tools.demo.echo(text='by name'))\n"
                      "print(sandgate_tools.demo.echo.__doc__)\n"
                      "try:\n"
                      "    sandgate_tools.demo.missing\n"
                      "except AttributeError as e:\n"
                      "    print('missing:', e)\n");
  INFO(python.stdout_text << python.stderr_text);
  CHECK(python.stdout_text ==
        "{'asked': {'server': 'demo', 'tool': 'echo', 'arguments': {'text': 'hi'}}}\n"
        "{'asked': {'server': 'demo', 'tool': 'echo', 'arguments': {'text': 'by name'}}}\n"
        "Echoes.\n"
        "missing: upstream 'demo' has no tool 'missing' it may call\n");

  auto node = f.run(sb, Language::javascript,
                    "const tools = require('sandgate_tools');\n"
                    "tools.demo.echo({text: 'js'}).then((r) => console.log(JSON.stringify(r)));\n");
  INFO(node.stdout_text << node.stderr_text);
  CHECK(node.stdout_text ==
        "{\"asked\":{\"server\":\"demo\",\"tool\":\"echo\",\"arguments\":{\"text\":\"js\"}}}\n");

  auto bash = f.run(sb, Language::bash,
                    "sandgate-tool demo echo '{\"text\": \"sh\"}'\n"
                    "sandgate-tool demo echo 'not json'; echo \"status $?\"\n");
  INFO(bash.stdout_text << bash.stderr_text);
  CHECK(
      bash.stdout_text ==
      "{\"asked\": {\"server\": \"demo\", \"tool\": \"echo\", \"arguments\": {\"text\": \"sh\"}}}\n"
      "status 2\n");

  // The socket and the libraries are the sandbox's own and read-only: no program replaces them.
  auto files =
      f.run(sb, Language::bash,
            "rm -f /sandgate/tools.sock 2>&1 | grep -c 'Read-only file system'\n"
            "echo x 2>&1 >> /sandgate/python/sandgate_tools.py | grep -Ec 'denied|Read-only'\n"
            "test -S /sandgate/tools.sock && echo socket\n");
  INFO(files.stdout_text << files.stderr_text);
  CHECK(files.stdout_text == "1\n1\nsocket\n");
}

TEST_CASE("a sandbox with egress and a tool channel gets both sockets, each where it belongs",
          "[sandbox][tool_channel][egress]") {
  sandgate::test::SandboxFixture f(tool_config(true));
  if (!f.require_isolation()) return;
  auto sb = f.create();
  sandgate::UniqueFd egress = sb->take_egress_listener();
  REQUIRE(egress);
  Responder responder(sb->take_tool_listener());
  auto r = f.run(sb, Language::python,
                 "import socket, sandgate_tools\n"
                 "s = socket.create_connection(('127.0.0.1', 3128), timeout=5)\n"
                 "s.close()\n"
                 "print(sandgate_tools.call('demo', 'echo')['asked']['tool'])\n");
  INFO(r.stdout_text << r.stderr_text);
  CHECK(r.stdout_text == "echo\n");
  // The proxy's connection waits in the egress listener's queue, not the channel's.
  sandgate::UniqueFd accepted(::accept4(egress.get(), nullptr, nullptr, SOCK_NONBLOCK));
  CHECK(accepted);
}

TEST_CASE("a sandbox without a tool channel has no socket and no tool libraries",
          "[sandbox][tool_channel]") {
  sandgate::test::SandboxFixture f;
  if (!f.require_isolation()) return;
  auto sb = f.create();
  CHECK_FALSE(sb->take_tool_listener());
  auto r = f.run(sb, Language::bash,
                 "ls /sandgate\n"
                 "command -v sandgate-tool || echo no command\n"
                 "python3 -c 'import sandgate_tools' 2>&1 | tail -1\n");
  CHECK(r.stdout_text ==
        "python\nno command\nModuleNotFoundError: No module named 'sandgate_tools'\n");
}
