#include "streamed_answer.hpp"

#include <boost/asio/co_spawn.hpp>

#include "jsonrpc.hpp"
#include "jsonrpc_replies.hpp"

namespace sandgate::server {
namespace asio = boost::asio;
using nlohmann::json;

asio::awaitable<Reply> respond(const Request& req, Answer answer, std::shared_ptr<Outbox> outbox,
                               std::shared_ptr<CancelSignal> client, StreamStyle style) {
  auto executor = co_await asio::this_coro::executor;
  asio::co_spawn(executor, answer(), [outbox](std::exception_ptr error, json made) {
    if (error) made = jsonrpc::error(nullptr, jsonrpc::internal_error, "Internal error");
    outbox->finish(std::move(made));
  });
  Outbox::Item first = co_await outbox->next();
  if (first.is_answer) {
    if (first.answer.is_null()) co_return accepted(req);
    Reply reply = json_reply(req, first.answer);
    // A missing client capability is a request the client must change (2026-07-28: 400).
    if (first.answer.contains("error") && first.answer["error"].value("code", 0) == -32021) {
      reply.response.result(http::status::bad_request);
    }
    co_return reply;
  }
  Response head{http::status::ok, req.version()};
  head.set(http::field::content_type, "text/event-stream");
  head.set(http::field::cache_control, "no-cache");
  // Proxies such as nginx buffer responses by default, which would hold every event back.
  head.set("X-Accel-Buffering", "no");
  auto stream = [outbox, first = std::move(first), client,
                 style](EventSink& sink) -> asio::awaitable<void> {
    if (style.prime && !co_await sink.prime()) {
      client->cancel();
      co_return;
    }
    Outbox::Item item = first;
    for (;;) {
      if (item.is_answer) {
        if (!item.answer.is_null()) co_await sink.send(item.answer);
        co_return;
      }
      if (!co_await sink.send_serialized(std::move(item.notification))) {
        client->cancel();  // a write failed: the client has closed its stream
        co_return;
      }
      item = co_await outbox->next();
    }
  };
  co_return Reply{std::move(head), std::move(stream)};
}

}  // namespace sandgate::server
