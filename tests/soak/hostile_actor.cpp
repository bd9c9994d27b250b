#include "tests/soak/hostile_actor.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

namespace sandgate::soak {

namespace asio = boost::asio;
using namespace asio::experimental::awaitable_operators;
using tcp = asio::ip::tcp;
constexpr auto kTuple = asio::as_tuple(asio::use_awaitable);

namespace {

const std::string kBodyPrefix = R"({"jsonrpc":"2.0","id":1,"method":"tools/list","params":)";

// About 400 KB of nesting: deep enough to overflow any recursive parser's stack, well under the
// body limit.
std::string deeply_nested(bool objects) {
  constexpr int kDepth = 200000;
  std::string open = objects ? R"({"a":)" : "[";
  std::string close = objects ? "}" : "]";
  std::string body = kBodyPrefix;
  body.reserve(kBodyPrefix.size() + kDepth * (open.size() + close.size()) + 1);
  for (int i = 0; i < kDepth; ++i) body += open;
  body += "1";
  for (int i = 0; i < kDepth; ++i) body += close;
  return body + "}";
}

}  // namespace

HostileActor::HostileActor(asio::any_io_executor executor, tcp::endpoint server, std::string token,
                           std::uint64_t body_limit, unsigned seed, Tally& tally)
    : executor_(executor),
      server_(server),
      token_(std::move(token)),
      body_limit_(body_limit),
      random_(seed),
      tally_(tally) {}

std::string HostileActor::post_head(const std::string& extra_headers, std::size_t content_length,
                                    bool with_token) const {
  std::string head = "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(server_.port()) +
                     "\r\nAccept: application/json, text/event-stream\r\n";
  if (extra_headers.find("Content-Type:") == std::string::npos)
    head += "Content-Type: application/json\r\n";
  if (with_token) head += "Authorization: Bearer " + token_ + "\r\n";
  return head + extra_headers + "Content-Length: " + std::to_string(content_length) + "\r\n\r\n";
}

asio::awaitable<HostileActor::Answer> HostileActor::exchange(std::string request, bool trickle) {
  tcp::socket socket(executor_);
  Answer answer;
  auto [connect_ec] = co_await socket.async_connect(server_, kTuple);
  if (connect_ec) {
    tally_.transport("hostile connect", connect_ec.message());
    co_return answer;
  }
  // The gateway may answer (and close) before it has read all we send: write and read at once.
  std::string received;
  auto writer = [&]() -> asio::awaitable<void> {
    auto [ec, n] = co_await asio::async_write(socket, asio::buffer(request), kTuple);
    if (ec || !trickle) co_return;
    asio::steady_timer pause(executor_);
    for (int i = 0; i < 600; ++i) {
      pause.expires_after(std::chrono::milliseconds(100));
      co_await pause.async_wait(kTuple);
      auto [ec2, n2] = co_await asio::async_write(socket, asio::buffer("x", 1), kTuple);
      if (ec2) co_return;
    }
  };
  auto reader = [&]() -> asio::awaitable<void> {
    auto [ec, n] =
        co_await asio::async_read_until(socket, asio::dynamic_buffer(received), "\r\n\r\n", kTuple);
    (void)ec;
    (void)n;
  };
  // A wedge guard, not a timing claim: no answer within a minute is a failure.
  asio::steady_timer guard(executor_);
  guard.expires_after(std::chrono::seconds(60));
  co_await ((reader() && writer()) || guard.async_wait(kTuple));
  boost::system::error_code ignored;
  socket.close(ignored);
  auto end = received.find("\r\n\r\n");
  answer.head = received.substr(0, end);
  if (end != std::string::npos) answer.body = received.substr(end + 4);
  if (answer.head.rfind("HTTP/1.1 ", 0) == 0 && answer.head.size() >= 12)
    answer.status = std::atoi(answer.head.substr(9, 3).c_str());
  co_return answer;
}

void HostileActor::expect(bool ok, const std::string& scenario, const Answer& answer) {
  tally_.done["hostile_" + scenario]++;
  if (!ok)
    tally_.wrong("hostile_" + scenario,
                 answer.status == 0 ? "no answer" : answer.head.substr(0, 200));
}

asio::awaitable<void> HostileActor::run(std::chrono::steady_clock::time_point deadline) {
  asio::steady_timer pause(executor_);
  while (std::chrono::steady_clock::now() < deadline) {
    // A steady trickle rather than a flood: the point is that each attack is answered while
    // ordinary clients are served, not to measure how many the gateway can refuse per second.
    pause.expires_after(
        std::chrono::milliseconds(std::uniform_int_distribution<int>(50, 250)(random_)));
    co_await pause.async_wait(kTuple);
    switch (std::uniform_int_distribution<int>(0, 7)(random_)) {
      case 0:
        co_await deep_arrays();
        break;
      case 1:
        co_await deep_objects();
        break;
      case 2:
        co_await smuggled_content_type();
        break;
      case 3:
        co_await look_alike_origin();
        break;
      case 4:
        co_await look_alike_host();
        break;
      case 5:
        co_await huge_body_without_token();
        break;
      case 6:
        co_await slow_body_without_token();
        break;
      default:
        co_await over_limit_body();
    }
  }
}

asio::awaitable<void> HostileActor::deep_arrays() {
  std::string body = deeply_nested(false);
  auto answer = co_await exchange(post_head("", body.size(), true) + body);
  expect(answer.status == 400 && answer.body.find("-32700") != std::string::npos, "deep_arrays",
         answer);
}

asio::awaitable<void> HostileActor::deep_objects() {
  std::string body = deeply_nested(true);
  auto answer = co_await exchange(post_head("", body.size(), true) + body);
  expect(answer.status == 400 && answer.body.find("-32700") != std::string::npos, "deep_objects",
         answer);
}

asio::awaitable<void> HostileActor::smuggled_content_type() {
  // A browser sends this without a CORS preflight; it must not pass as JSON.
  std::string body = kBodyPrefix + "{}}";
  auto answer = co_await exchange(
      post_head("Content-Type: text/plain;a=,application/json\r\n", body.size(), true) + body);
  expect(answer.status == 415, "smuggled_content_type", answer);
}

asio::awaitable<void> HostileActor::look_alike_origin() {
  std::string body = kBodyPrefix + "{}}";
  const char* origins[] = {"http://127.evil.example", "http://127.0.0.1.evil.example",
                           "http://localhost.evil.example"};
  std::string origin = origins[std::uniform_int_distribution<int>(0, 2)(random_)];
  auto answer =
      co_await exchange(post_head("Origin: " + origin + "\r\n", body.size(), true) + body);
  expect(answer.status == 403, "look_alike_origin", answer);
}

asio::awaitable<void> HostileActor::look_alike_host() {
  std::string body = kBodyPrefix + "{}}";
  std::string request = post_head("", body.size(), true) + body;
  std::string real = "Host: 127.0.0.1:" + std::to_string(server_.port());
  request.replace(request.find(real), real.size(),
                  "Host: 127.evil.example:" + std::to_string(server_.port()));
  auto answer = co_await exchange(request);
  expect(answer.status == 403, "look_alike_host", answer);
}

asio::awaitable<void> HostileActor::huge_body_without_token() {
  // Announces the largest body allowed and sends none of it: the refusal must not wait for it.
  auto answer = co_await exchange(post_head("", body_limit_, false));
  expect(answer.status == 401, "huge_body_without_token", answer);
}

asio::awaitable<void> HostileActor::slow_body_without_token() {
  auto answer = co_await exchange(post_head("", 1 << 20, false) + "{", true);
  expect(answer.status == 401, "slow_body_without_token", answer);
}

asio::awaitable<void> HostileActor::over_limit_body() {
  auto answer = co_await exchange(post_head("", body_limit_ + 1, true));
  expect(answer.status == 413, "over_limit_body", answer);
}

}  // namespace sandgate::soak
