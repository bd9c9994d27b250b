#pragma once
// A request answered as an event stream: progress notifications while its answer is made,
// then the answer. The answer is made in its own coroutine that owns what it needs, so it
// runs to the end even when the client stops reading (whether that cancels it is the
// caller's business).
#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <functional>
#include <nlohmann/json.hpp>

#include "server/http/http_types.hpp"

namespace sandgate::server {

// Makes the answer's coroutine. That coroutine must own its arguments (take them by value):
// it can outlive the stream, and the function object, that started it.
using Answer = std::function<boost::asio::awaitable<nlohmann::json>()>;

// A null answer (a cancelled call) sends no final event.
Reply progress_stream(const Request& request, std::chrono::seconds interval,
                      nlohmann::json progress_token, Answer answer);

}  // namespace sandgate::server
