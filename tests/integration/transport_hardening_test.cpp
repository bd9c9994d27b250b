// Hostile requests against the real binary that used to crash it, slip past its Origin/Host
// and Content-Type rules, make it read bodies of clients without a token, let one address take
// every connection, steer forwarding, amplify output, or leak its sockets into children (issue
// #11). Each test fails on the gateway before the fix.
#include <sys/socket.h>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <filesystem>
#include <fstream>

#include "gateway_process.hpp"
#include "temp_file.hpp"

using namespace sandgate::test;
using nlohmann::json;
namespace asio = boost::asio;
using tcp = asio::ip::tcp;

namespace {

// `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"a":` then `levels` nested arrays or
// objects: 200,000 levels is ~400 KB (arrays), under the default body limit.
std::string deep_body(std::size_t levels, bool arrays) {
  std::string open = arrays ? "[" : "{\"a\":", close = arrays ? "]" : "}";
  std::string body = R"({"jsonrpc":"2.0","id":1,"method":"ping","params":{"a":)";
  for (std::size_t i = 0; i < levels; ++i) body += open;
  body += "0";
  for (std::size_t i = 0; i < levels; ++i) body += close;
  return body + "}}";
}

tcp::socket connect_from(asio::io_context& io, int port, const char* from = "127.0.0.1") {
  tcp::socket s(io);
  s.open(tcp::v4());
  s.bind({asio::ip::make_address(from), 0});
  s.connect({asio::ip::make_address("127.0.0.1"), static_cast<unsigned short>(port)});
  return s;
}

// Reads what the server sends until it closes or `limit` passes.
struct Received {
  std::string bytes;
  bool closed = false;
};
Received read_until_close(tcp::socket& s, std::chrono::seconds limit) {
  Received r;
  ::timeval tv{0, 200'000};
  ::setsockopt(s.native_handle(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  auto deadline = std::chrono::steady_clock::now() + limit;
  char buffer[4096];
  while (std::chrono::steady_clock::now() < deadline) {
    ssize_t n = ::recv(s.native_handle(), buffer, sizeof buffer, 0);
    if (n > 0) r.bytes.append(buffer, static_cast<std::size_t>(n));
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)) {
      r.closed = true;
      break;
    }
  }
  return r;
}

// One keep-alive GET /healthz on `s`; true when it was answered 200.
bool healthz(tcp::socket& s, int port, const std::string& more_headers = "") {
  std::string req = "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(port) + "\r\n" +
                    more_headers + "\r\n";
  boost::system::error_code ec;
  asio::write(s, asio::buffer(req), ec);
  if (ec) return false;
  boost::beast::flat_buffer buffer;
  http::response<http::string_body> res;
  http::read(s, buffer, res, ec);
  return !ec && res.result_int() == 200;
}

json ping(int id = 2) {
  return {{"jsonrpc", "2.0"}, {"id", id}, {"method", "ping"}};
}

}  // namespace

TEST_CASE("deeply nested JSON gets 400 -32700 and the gateway keeps serving",
          "[integration][hardening][depth]") {
  GatewayProcess gw({});
  std::string id = gw.initialize();
  for (bool arrays : {true, false}) {
    std::string body = deep_body(200'000, arrays);
    for (const std::string& session : {std::string(), id}) {
      INFO((arrays ? "arrays" : "objects") << (session.empty() ? ", no session" : ", session"));
      auto r = gw.request(http::verb::post, "/mcp", body, GatewayProcess::mcp_headers(session));
      CHECK(r.status == 400);
      CHECK(r.json_body()["error"]["code"] == -32700);
    }
    // Only opening brackets, as an attacker would send them.
    auto r = gw.request(http::verb::post, "/mcp", std::string(400'000, arrays ? '[' : '{'),
                        GatewayProcess::mcp_headers(id));
    CHECK(r.status == 400);
  }
  // Still the same process, still serving the session.
  CHECK(::kill(gw.pid(), 0) == 0);
  CHECK(gw.post(ping(), id).status == 200);
}

TEST_CASE("deeply nested JSON without a token: refused, the gateway keeps serving (--no-auth)",
          "[integration][hardening][depth]") {
  GatewayProcess gw({"--no-auth"}, {});
  auto headers = GatewayProcess::mcp_headers();
  headers.erase("Authorization");
  auto r = gw.request(http::verb::post, "/mcp", deep_body(200'000, true), headers);
  CHECK(r.status == 400);
  CHECK(gw.request(http::verb::post, "/mcp", ping().dump(), headers).status == 400);  // no session
  CHECK(gw.request(http::verb::get, "/healthz").status == 200);
}

TEST_CASE("loopback look-alike Origin and Host names get 403, real loopback names pass",
          "[integration][hardening][loopback]") {
  GatewayProcess gw({});
  json init = {{"jsonrpc", "2.0"},
               {"id", 1},
               {"method", "initialize"},
               {"params",
                {{"protocolVersion", "2025-11-25"},
                 {"capabilities", json::object()},
                 {"clientInfo", {{"name", "it"}, {"version", "1"}}}}}};
  auto with = [&](const std::string& name, const std::string& value) {
    auto headers = GatewayProcess::mcp_headers();
    headers[name] = value;
    return gw.request(http::verb::post, "/mcp", init.dump(), headers).status;
  };
  std::string port = std::to_string(gw.port());
  for (std::string origin :
       std::vector<std::string>{"http://127.evil.example", "http://127.0.0.1.evil.example",
                                "http://127.0.0.1.evil.example:" + port}) {
    INFO(origin);
    CHECK(with("Origin", origin) == 403);
  }
  CHECK(with("Host", "127.evil.example:" + port) == 403);
  CHECK(with("Host", "127.0.0.1.evil.example:" + port) == 403);
  for (std::string origin :
       std::vector<std::string>{"http://127.0.0.1:" + port, "http://127.1.2.3",
                                "http://[::1]:" + port, "http://localhost:3000"}) {
    INFO(origin);
    CHECK(with("Origin", origin) == 200);
  }
  for (std::string host :
       {"127.0.0.1:" + port, "127.1.2.3:" + port, "[::1]:" + port, "localhost:" + port}) {
    INFO(host);
    CHECK(with("Host", host) == 200);
  }
}

TEST_CASE("Content-Type must be exactly one media type, application/json",
          "[integration][hardening][content-type]") {
  GatewayProcess gw({});
  std::string id = gw.initialize();
  auto with = [&](const std::string& type) {
    auto headers = GatewayProcess::mcp_headers(id);
    headers["Content-Type"] = type;
    return gw.request(http::verb::post, "/mcp", ping().dump(), headers).status;
  };
  CHECK(with("text/plain;a=,application/json") == 415);
  CHECK(with("application/json, text/plain") == 415);
  CHECK(with("text/plain") == 415);
  CHECK(with("application/json; charset=utf-8") == 200);
  CHECK(with("Application/JSON") == 200);
}

TEST_CASE("no token: 401 on the headers alone, no 100 Continue, the body never read",
          "[integration][hardening][auth-before-body]") {
  GatewayProcess gw({"--body-timeout", "30"});
  std::size_t limit = 3u << 20;  // the default: 2 MiB + the 1 MiB stdin cap
  for (bool expect_continue : {false, true}) {
    for (std::string auth : {"", "Authorization: Bearer wrong\r\n"}) {
      INFO((expect_continue ? "Expect: 100-continue" : "no Expect")
           << ", " << (auth.empty() ? "no token" : "bad token"));
      asio::io_context io;
      auto s = connect_from(io, gw.port());
      std::string head = "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(gw.port()) +
                         "\r\n" + auth +
                         "Content-Type: application/json\r\nAccept: application/json, "
                         "text/event-stream\r\nContent-Length: " +
                         std::to_string(limit) + "\r\n" +
                         (expect_continue ? "Expect: 100-continue\r\n" : "") + "\r\n";
      asio::write(s, asio::buffer(head));
      // Only the headers were sent: the answer comes now, and the connection is then closed
      // (the old gateway waited for the 3 MiB body, up to the body timeout).
      auto got = read_until_close(s, std::chrono::seconds(10));
      CHECK(got.bytes.rfind("HTTP/1.1 401", 0) == 0);
      CHECK(got.bytes.find("100 Continue") == std::string::npos);
      CHECK(got.closed);
    }
  }
  // A refused request without a body keeps its connection: the next one on it is served.
  asio::io_context io;
  auto s = connect_from(io, gw.port());
  std::string head = "DELETE /mcp HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(gw.port()) +
                     "\r\nContent-Length: 0\r\n\r\n";
  asio::write(s, asio::buffer(head));
  boost::beast::flat_buffer buffer;
  http::response<http::string_body> res;
  http::read(s, buffer, res);
  CHECK(res.result_int() == 401);
  CHECK(healthz(s, gw.port()));
  // A wrong method with a body is refused (405) before its body too.
  auto other = connect_from(io, gw.port());
  asio::write(other,
              asio::buffer("PUT /mcp HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(gw.port()) +
                           "\r\nAuthorization: Bearer test-token\r\nContent-Length: " +
                           std::to_string(limit) + "\r\n\r\n"));
  auto got = read_until_close(other, std::chrono::seconds(10));
  CHECK(got.bytes.rfind("HTTP/1.1 405", 0) == 0);
  CHECK(gw.post(ping(), gw.initialize()).status == 200);
}

TEST_CASE("a connection showing the peer secret holds no place in its address's share",
          "[integration][hardening][per-address][replicas]") {
  constexpr std::size_t cap = 2;
  const std::string secret = "a-secret-every-replica-of-this-test-shares-0123";
  TempFile secret_file("peer-secret");
  secret_file.write(secret + "\n");
  GatewayProcess gw({"--max-connections-per-address", std::to_string(cap), "--peer-secret-file",
                     secret_file.path.string()});
  asio::io_context io;
  // Opens connections from 127.0.0.1, each proven open by an answered request with `headers`,
  // until `count` are held or none more is served.
  auto hold = [&](std::vector<tcp::socket>& held, std::size_t count, const std::string& headers) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (held.size() < count && std::chrono::steady_clock::now() < deadline) {
      auto s = connect_from(io, gw.port());
      if (healthz(s, gw.port(), headers))
        held.push_back(std::move(s));
      else
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  };
  // A wrong secret (one character off) is any client's connection: the share fills.
  std::vector<tcp::socket> guessing;
  std::string wrong = secret;
  wrong.back() = '4';
  hold(guessing, cap, "X-Sandgate-Peer-Secret: " + wrong + "\r\n");
  REQUIRE(guessing.size() == cap);
  auto refused = connect_from(io, gw.port());
  CHECK_FALSE(healthz(refused, gw.port()));
  guessing.clear();
  // Replicas' connections (more than the share) leave the share to clients.
  std::vector<tcp::socket> peers, clients;
  hold(peers, cap + 2, "X-Sandgate-Peer-Secret: " + secret + "\r\n");
  CHECK(peers.size() == cap + 2);
  hold(clients, cap, "");
  CHECK(clients.size() == cap);
  auto over = connect_from(io, gw.port());
  CHECK_FALSE(healthz(over, gw.port()));
}

TEST_CASE("one address cannot take every connection slot",
          "[integration][hardening][per-address]") {
  constexpr int cap = 3;
  GatewayProcess gw({"--max-connections-per-address", std::to_string(cap)});
  asio::io_context io;
  // `cap` connections from 127.0.0.1, each proven open by a request answered on it. (A probe
  // connection of the start-up may still be counted for a moment: retry briefly.)
  std::vector<tcp::socket> held;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (held.size() < cap && std::chrono::steady_clock::now() < deadline) {
    auto s = connect_from(io, gw.port());
    if (healthz(s, gw.port()))
      held.push_back(std::move(s));
    else
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  REQUIRE(held.size() == cap);
  // The next one from the same address is closed at once, unanswered.
  auto refused = connect_from(io, gw.port());
  CHECK_FALSE(healthz(refused, gw.port()));
  // Another address (all of 127/8 is loopback on Linux) is served meanwhile.
  auto other = connect_from(io, gw.port(), "127.0.0.2");
  CHECK(healthz(other, gw.port()));
  // A slot freed is a slot back.
  held.pop_back();
  bool again = false;
  for (int i = 0; i < 100 && !again; ++i) {
    auto s = connect_from(io, gw.port());
    again = healthz(s, gw.port());
    if (!again) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  CHECK(again);
}

TEST_CASE("a per-address connection cap of 0 is no cap", "[integration][hardening][per-address]") {
  GatewayProcess gw({"--max-connections-per-address", "0", "--max-connections", "64"});
  asio::io_context io;
  std::vector<tcp::socket> held;
  for (int i = 0; i < 20; ++i) {
    held.push_back(connect_from(io, gw.port()));
    CHECK(healthz(held.back(), gw.port()));
  }
}

TEST_CASE("the gateway's sockets are close-on-exec", "[integration][hardening][cloexec]") {
  GatewayProcess gw({});
  asio::io_context io;
  auto s = connect_from(io, gw.port());
  REQUIRE(healthz(s, gw.port()));  // an accepted connection is open now
  int sockets = 0;
  std::string proc = "/proc/" + std::to_string(gw.pid());
  for (const auto& entry : std::filesystem::directory_iterator(proc + "/fd")) {
    std::error_code ec;
    auto target = std::filesystem::read_symlink(entry.path(), ec);
    if (ec || target.string().rfind("socket:", 0) != 0) continue;
    ++sockets;
    std::ifstream info(proc + "/fdinfo/" + entry.path().filename().string());
    std::string key, flags;
    while (info >> key && key != "flags:") info.ignore(1 << 10, '\n');
    info >> flags;
    INFO("fd " << entry.path().filename().string() << " flags " << flags);
    CHECK((std::stoul(flags, nullptr, 8) & 02000000) != 0);  // O_CLOEXEC
  }
  CHECK(sockets >= 2);  // the listening socket and our connection at least
}

TEST_CASE("a peer URL template a session id could steer is refused at start",
          "[integration][hardening][replicas]") {
  // With the host just {replica}, the id "2130706433.<hex>" named 127.0.0.1.
  for (std::string bad : {"http://{replica}:9", "http://{replica}.10.0.0.1:9"}) {
    INFO(bad);
    // Bounded: a gateway that accepts the template would serve until killed (exit 124).
    std::string command = "timeout 10 " + std::string(SANDGATE_BINARY) +
                          " --listen 127.0.0.1:0 --replica-name a --peer-url-template '" + bad +
                          "' 2>&1";
    std::string out;
    FILE* pipe = ::popen(("SANDGATE_TOKEN=t " + command).c_str(), "r");
    REQUIRE(pipe);
    char buffer[512];
    while (std::fgets(buffer, sizeof buffer, pipe)) out += buffer;
    int status = ::pclose(pipe);
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 2);
    CHECK(out.find("--peer-url-template") != std::string::npos);
  }
  // A numeric replica name is refused too.
  FILE* pipe = ::popen("SANDGATE_TOKEN=t timeout 10 " SANDGATE_BINARY
                       " --listen 127.0.0.1:0 --replica-name 2130706433 2>&1",
                       "r");
  REQUIRE(pipe);
  char buffer[512];
  while (std::fgets(buffer, sizeof buffer, pipe)) {
  }
  int status = ::pclose(pipe);
  CHECK(WEXITSTATUS(status) == 2);
}

TEST_CASE("a session id naming a numeric replica is not forwarded",
          "[integration][hardening][replicas]") {
  // The template's names end in .invalid, which never resolves: every forward the gateway
  // attempts is logged as a failed one. The same request naming replica "b" shows that a
  // forward would be seen; the numeric names must leave no trace of one.
  TempFile log("numeric-replica.log");
  GatewayProcess gw({"--replica-name", "a", "--peer-url-template", "http://{replica}.invalid:9"},
                    {"SANDGATE_TOKEN=test-token"}, false,
                    {EXEC_WITH_BINARY, "--stderr", log.path.string(), "--"});
  std::string hex(32, 'f');
  for (std::string owner : {"2130706433", "0x7f000001", "017700000001", "b"}) {
    INFO(owner);
    CHECK(gw.post(ping(), owner + "." + hex).status == 404);
  }
  std::string logged = log.read();
  INFO(logged);
  CHECK(logged.find(R"("peer":"b.invalid:9")") != std::string::npos);
  for (std::string owner : {"2130706433", "0x7f000001", "017700000001"})
    CHECK(logged.find(owner + ".invalid") == std::string::npos);
}

TEST_CASE("1 MiB of control bytes gives a bounded response, marked truncated",
          "[integration][hardening][output]") {
  GatewayProcess gw({});
  std::string id = gw.initialize();
  auto r = gw.call_execute(id, "head -c 1048576 /dev/zero | tr '\\0' '\\1'", "bash", 60);
  REQUIRE(r.status == 200);
  // Before: 13.6 MB (each byte escaped as \u0001, and again in the text form).
  INFO("response bytes: " << r.body.size());
  CHECK(r.body.size() < 3 * (1u << 20) + 64 * 1024);
  json result = r.json_body()["result"];
  CHECK(result["structuredContent"]["truncated"] == true);
  std::string out = result["structuredContent"]["stdout"];
  CHECK(out.size() > 100'000);
  CHECK(out.find_first_not_of('\x01') == std::string::npos);
  // Ordinary text up to the cap is untouched by the bound.
  auto plain = gw.execute(id, "head -c 1000000 /dev/zero | tr '\\0' 'x'", "bash", 60);
  CHECK(plain["structuredContent"]["truncated"] == false);
  CHECK(plain["structuredContent"]["stdout"].get<std::string>().size() == 1000000);
}

TEST_CASE("request headers over 16 KiB get 431, and the gateway serves on",
          "[integration][hardening]") {
  GatewayProcess gw({});
  auto headers = GatewayProcess::mcp_headers();
  headers["X-Padding"] = std::string(17 * 1024, 'a');
  CHECK(gw.request(http::verb::post, "/mcp", initialize_message(0, "it").dump(), headers).status ==
        431);
  // Under the limit, the same request is served.
  headers["X-Padding"] = std::string(15 * 1024, 'a');
  CHECK(gw.request(http::verb::post, "/mcp", initialize_message(0, "it").dump(), headers).status ==
        200);
  CHECK_FALSE(gw.initialize().empty());
}
