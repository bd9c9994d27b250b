// The MCP stdio transport (server/stdio/stdio_transport) in front of an endpoint that records
// what it was asked: the headers each line's POST carries, answers as lines, a line over the
// bound answered and skipped, and the end of input reported.
#include "server/stdio/stdio_transport.hpp"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <atomic>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <catch2/catch.hpp>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

using namespace sandgate::server;
using nlohmann::json;

namespace {

// Answers initialize with a session id, "refused" with a plain-text 403, a 2026-07-28 message (any
// with Mcp-Method) with the headers it got, a notification with 202, and everything else with the
// headers it got; "hold" only once a "release" came (a long call, and what ends it).
class RecordingEndpoint final : public Endpoint {
 public:
  boost::asio::awaitable<std::optional<Response>> admit(const Request&) override {
    co_return std::nullopt;
  }
  boost::asio::awaitable<Reply> handle(const Request& request,
                                       std::shared_ptr<sandgate::CancelSignal>) override {
    json message = json::parse(request.body());
    Reply reply;
    reply.response.result(http::status::ok);
    if (!message.contains("id")) {
      reply.response.result(http::status::accepted);
      co_return reply;
    }
    if (message["method"] == "hold") co_await released();
    if (message["method"] == "release") release();
    if (message["method"] == "refused") {  // a refusal without a JSON body
      reply.response.result(http::status::forbidden);
      reply.response.body() = "Forbidden";
      co_return reply;
    }
    json seen = {{"session", std::string(request["Mcp-Session-Id"])},
                 {"version", std::string(request["MCP-Protocol-Version"])},
                 {"method", std::string(request["Mcp-Method"])},
                 {"name", std::string(request["Mcp-Name"])}};
    json result = seen;
    if (message["method"] == "initialize") {
      reply.response.set("Mcp-Session-Id", "s-1");
      result = {{"protocolVersion", "2025-06-18"}};
    }
    reply.response.body() =
        json{{"jsonrpc", "2.0"}, {"id", message["id"]}, {"result", result}}.dump();
    co_return reply;
  }

 private:
  boost::asio::awaitable<void> released() {
    auto timer = std::make_shared<boost::asio::steady_timer>(
        co_await boost::asio::this_coro::executor, boost::asio::steady_timer::time_point::max());
    {
      std::lock_guard lock(mutex_);
      if (released_) co_return;
      held_ = timer;
    }
    co_await timer->async_wait(boost::asio::as_tuple(boost::asio::use_awaitable));
  }
  void release() {
    std::lock_guard lock(mutex_);
    released_ = true;
    if (held_) boost::asio::post(held_->get_executor(), [timer = held_] { timer->cancel(); });
  }
  std::mutex mutex_;
  bool released_ = false;
  std::shared_ptr<boost::asio::steady_timer> held_;
};

bool eventually_closed(const std::atomic<bool>& closed) {
  for (int i = 0; i < 500 && !closed; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  return closed;
}

struct Pipes {
  int in[2], out[2];
  Pipes() {
    REQUIRE(::pipe2(in, O_CLOEXEC) == 0);
    REQUIRE(::pipe2(out, O_CLOEXEC) == 0);
  }
  ~Pipes() {
    for (int fd : {in[0], in[1], out[0], out[1]})
      if (fd >= 0) ::close(fd);
  }
  void send(const std::string& line) {
    std::string l = line + "\n";
    REQUIRE(::write(in[1], l.data(), l.size()) == static_cast<ssize_t>(l.size()));
  }
  json next() {
    std::string line;
    char c;
    pollfd p{out[0], POLLIN, 0};
    while (::poll(&p, 1, 10000) > 0 && ::read(out[0], &c, 1) == 1 && c != '\n') line += c;
    INFO(line);
    return json::parse(line);
  }
};

}  // namespace

TEST_CASE("the stdio transport turns lines into the requests an HTTP client would send",
          "[unit][stdio]") {
  boost::asio::io_context io;
  auto work = boost::asio::make_work_guard(io);
  std::thread runner([&] { io.run(); });
  // Joined whatever a check throws.
  struct Join {
    boost::asio::io_context& io;
    std::thread& runner;
    ~Join() {
      io.stop();
      runner.join();
    }
  } join{io, runner};
  RecordingEndpoint endpoint;
  Pipes pipes;
  std::atomic<bool> closed{false};
  StdioTransport transport(io.get_executor(), endpoint, pipes.in[0], pipes.out[1], 1024,
                           [&] { closed = true; });
  transport.start();

  pipes.send(R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{}})");
  CHECK(pipes.next()["result"]["protocolVersion"] == "2025-06-18");
  // A notification gets no line; the next request carries the session and the version.
  pipes.send(R"({"jsonrpc":"2.0","method":"notifications/initialized"})");
  pipes.send(R"({"jsonrpc":"2.0","id":2,"method":"tools/list"})");
  json listed = pipes.next();
  CHECK(listed["id"] == 2);
  CHECK(listed["result"]["session"] == "s-1");
  CHECK(listed["result"]["version"] == "2025-06-18");
  // A 2026-07-28 message: no session; its revision, method and tool name from its body.
  pipes.send(
      R"({"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"execute","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}})");
  json modern = pipes.next()["result"];
  CHECK(modern["session"] == "");
  CHECK(modern["version"] == "2026-07-28");
  CHECK(modern["method"] == "tools/call");
  CHECK(modern["name"] == "execute");
  // A line over the bound is answered with a parse error and skipped; the next one is served.
  pipes.send(std::string(3000, 'x'));
  json refused = pipes.next();
  CHECK(refused["error"]["code"] == -32700);
  CHECK(refused["id"].is_null());
  pipes.send(R"({"jsonrpc":"2.0","id":4,"method":"ping"})");
  CHECK(pipes.next()["id"] == 4);
  // So is one read in many pieces (longer than a read), refused once.
  // (Written on a thread of its own, without Catch's checks, which are for one thread only: the
  // pipe holds less than the line, and the answer comes before its end is read.)
  std::thread writer([fd = pipes.in[1]] {
    std::string line(200000, 'y');
    line += '\n';
    for (std::size_t done = 0; done < line.size();) {
      ssize_t n = ::write(fd, line.data() + done, line.size() - done);
      if (n <= 0) return;
      done += static_cast<std::size_t>(n);
    }
  });
  CHECK(pipes.next()["error"]["code"] == -32700);
  writer.join();
  pipes.send(R"({"jsonrpc":"2.0","id":5,"method":"ping"})");
  CHECK(pipes.next()["id"] == 5);
  // A request is always answered, even when the endpoint's refusal is not JSON-RPC.
  pipes.send(R"({"jsonrpc":"2.0","id":6,"method":"refused"})");
  json told = pipes.next();
  CHECK(told["id"] == 6);
  CHECK(told["error"]["message"].get<std::string>().find("HTTP 403") != std::string::npos);
  // A request whose method is not a string is answered too (the endpoint's answer; before, the
  // transport's own look at the method threw and nothing was written).
  pipes.send(R"({"jsonrpc":"2.0","id":7,"method":5})");
  CHECK(pipes.next()["id"] == 7);
  // Only initialize holds the reader: a long call whose arguments merely contain the word does
  // not, so the line that ends it is read and both are answered.
  pipes.send(
      R"({"jsonrpc":"2.0","id":8,"method":"hold","params":{"arguments":{"initialize":"initialize"}}})");
  pipes.send(R"({"jsonrpc":"2.0","id":9,"method":"release"})");
  std::set<int> ids{pipes.next()["id"].get<int>(), pipes.next()["id"].get<int>()};
  CHECK(ids == std::set<int>{8, 9});
  // The end of input is reported.
  ::close(pipes.in[1]);
  pipes.in[1] = -1;
  CHECK(eventually_closed(closed));
  transport.stop();
}
