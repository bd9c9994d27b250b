#include "progress_stream.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/experimental/concurrent_channel.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "jsonrpc.hpp"

namespace sandgate::server {
namespace asio = boost::asio;
using namespace asio::experimental::awaitable_operators;
using nlohmann::json;

Reply progress_stream(const Request& req, std::chrono::seconds interval, json token,
                      Answer answer) {
  Response head{http::status::ok, req.version()};
  head.set(http::field::content_type, "text/event-stream");
  head.set(http::field::cache_control, "no-cache");
  // Proxies such as nginx buffer responses by default, which would hold every event back.
  head.set("X-Accel-Buffering", "no");
  auto stream = [interval, token = std::move(token),
                 answer = std::move(answer)](EventSink& sink) -> asio::awaitable<void> {
    using Done = asio::experimental::concurrent_channel<void(boost::system::error_code, json)>;
    auto executor = co_await asio::this_coro::executor;
    auto done = std::make_shared<Done>(executor, 1);
    asio::co_spawn(executor, answer(), [done](std::exception_ptr error, json made) {
      if (error) made = jsonrpc::error(nullptr, jsonrpc::internal_error, "internal error");
      done->try_send(boost::system::error_code{}, std::move(made));
    });
    if (!co_await sink.prime()) co_return;
    auto started = std::chrono::steady_clock::now();
    asio::steady_timer tick(executor);
    for (;;) {
      tick.expires_after(interval);
      auto which = co_await (done->async_receive(asio::as_tuple(asio::use_awaitable)) ||
                             tick.async_wait(asio::as_tuple(asio::use_awaitable)));
      if (which.index() == 0) {
        json made = std::get<1>(std::get<0>(which));
        if (!made.is_null()) co_await sink.send(made);
        co_return;
      }
      auto elapsed = std::chrono::duration_cast<std::chrono::seconds>(
                         std::chrono::steady_clock::now() - started)
                         .count();
      json progress = jsonrpc::notification(
          "notifications/progress", {{"progressToken", token},
                                     {"progress", elapsed},
                                     {"message", "running for " + std::to_string(elapsed) + " s"}});
      if (!co_await sink.send(progress)) co_return;  // the answer goes on; its result is dropped
    }
  };
  return {std::move(head), std::move(stream)};
}

}  // namespace sandgate::server
