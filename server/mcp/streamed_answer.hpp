#pragma once
// Answers a request whose answer may come with notifications first. The answer is made in its
// own coroutine, which owns what it needs and runs to its end even when the client goes away
// (whether that cancels it is the era's business, through the CancelSignal). The response is
// plain JSON when the answer comes before any notification, else an event stream: the
// notifications as they come, then the answer.
#include <boost/asio/awaitable.hpp>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>

#include "common/cancel_signal.hpp"
#include "outbox.hpp"
#include "server/http/http_types.hpp"

namespace sandgate::server {

// Makes the answer's coroutine, which must take its arguments by value: it can outlive the
// response and the function object that started it. A null answer is no response (202).
using Answer = std::function<boost::asio::awaitable<nlohmann::json>()>;

struct StreamStyle {
  bool prime = false;  // 2025: an event with an id and no data first (for resumption)
};

boost::asio::awaitable<Reply> respond(const Request& request, Answer answer,
                                      std::shared_ptr<Outbox> outbox,
                                      std::shared_ptr<CancelSignal> client, StreamStyle style = {});

}  // namespace sandgate::server
