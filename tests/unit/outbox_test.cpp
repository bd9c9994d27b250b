// A request's outbox holds what waits for a client that does not read within a count and a
// byte budget, and never drops the answer.
#include "server/mcp/outbox.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>
#include <catch2/catch.hpp>

using namespace sandgate::server;
using nlohmann::json;

namespace {

json notification_of(std::size_t bytes) {
  return {{"jsonrpc", "2.0"},
          {"method", "notifications/message"},
          {"params", {{"level", "info"}, {"data", std::string(bytes, 'x')}}}};
}

Outbox::Item next_of(boost::asio::io_context& io, Outbox& outbox) {
  auto item = boost::asio::co_spawn(io, outbox.next(), boost::asio::use_future);
  for (int i = 0; i < 1000 && item.wait_for(std::chrono::seconds(0)) != std::future_status::ready;
       ++i) {
    io.restart();
    io.poll();
  }
  REQUIRE(item.wait_for(std::chrono::seconds(0)) == std::future_status::ready);
  return item.get();
}

}  // namespace

TEST_CASE("what waits in an outbox is bounded in bytes as well as in count", "[unit][outbox]") {
  boost::asio::io_context io;
  auto outbox = std::make_shared<Outbox>(io.get_executor());
  // 64 KiB notifications: the byte budget (1 MiB) is reached long before the count (256).
  const std::size_t each = notification_of(64 * 1024).dump().size();
  std::size_t taken = 0;
  while (outbox->post(notification_of(64 * 1024))) ++taken;
  CHECK(taken == Outbox::kMaxWaitingBytes / each);
  // One read makes room for about one more.
  auto first = next_of(io, *outbox);
  CHECK_FALSE(first.is_answer);
  CHECK(json::parse(first.notification)["params"]["data"].get<std::string>().size() == 64 * 1024);
  CHECK(outbox->post(notification_of(64 * 1024)));
  CHECK_FALSE(outbox->post(notification_of(64 * 1024)));
  // The answer is never dropped, and comes after what waits.
  outbox->finish({{"jsonrpc", "2.0"}, {"id", 1}, {"result", json::object()}});
  std::size_t read = 0;
  for (;;) {
    auto item = next_of(io, *outbox);
    if (item.is_answer) {
      CHECK(item.answer["id"] == 1);
      break;
    }
    ++read;
  }
  CHECK(read == taken);
}

TEST_CASE("small notifications stop at the outbox's count", "[unit][outbox]") {
  boost::asio::io_context io;
  auto outbox = std::make_shared<Outbox>(io.get_executor());
  std::size_t taken = 0;
  while (outbox->post(notification_of(10))) ++taken;
  CHECK(taken == Outbox::kMaxWaiting);
}
