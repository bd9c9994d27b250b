#pragma once
// The HTTP types shared by the transport and the connection code.
#include <boost/asio/awaitable.hpp>
#include <boost/beast/http.hpp>
#include <functional>
#include <nlohmann/json.hpp>

namespace sandgate::server {

namespace http = boost::beast::http;
using Request = http::request<http::string_body>;
using Response = http::response<http::string_body>;

// Where a streamed reply writes its Server-Sent Events, one at a time.
class EventSink {
 public:
  virtual ~EventSink() = default;
  // Sends `data` as one event with the next event id; false when the client has gone.
  virtual boost::asio::awaitable<bool> send(const nlohmann::json& data) = 0;
  // The same with the message already serialised (a notification that waited in an outbox).
  virtual boost::asio::awaitable<bool> send_serialized(std::string message) = 0;
  // An event with an id and empty data, which primes the client for reconnection.
  virtual boost::asio::awaitable<bool> prime() = 0;
  // Bytes of an event stream relayed as they are (from another replica).
  virtual boost::asio::awaitable<bool> raw(std::string bytes) = 0;
};

// A whole response, or (with `stream` set) the status and headers of an event stream whose
// events `stream` produces.
struct Reply {
  Response response;
  std::function<boost::asio::awaitable<void>(EventSink&)> stream;
};

}  // namespace sandgate::server
