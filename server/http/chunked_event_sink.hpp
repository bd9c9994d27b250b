#pragma once
// An EventSink writing Server-Sent Events as the chunks of an HTTP/1.1 response. Each write has
// a deadline: a client that stops reading its stream is dropped instead of pinning the
// connection.
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <cstdint>
#include <string>

#include "common/json_dump.hpp"
#include "endpoint.hpp"

namespace sandgate::server {

// Event ids, unique across the gateway's streams.
std::uint64_t next_event_id();

// Server-Sent Events over a chunked HTTP/1.1 response; one writer at a time by construction
// (the producer awaits each send).
template <class Stream>
class ChunkedEventSink final : public EventSink {
 public:
  ChunkedEventSink(Stream& stream, std::chrono::seconds write_timeout)
      : stream_(stream), write_timeout_(write_timeout) {}
  boost::asio::awaitable<bool> send(const nlohmann::json& data) override {
    return send_serialized(dump_json(data));
  }
  boost::asio::awaitable<bool> send_serialized(std::string message) override {
    return write("id: " + std::to_string(next_event_id()) + "\nevent: message\ndata: " + message +
                 "\n\n");
  }
  boost::asio::awaitable<bool> raw(std::string bytes) override { return write(std::move(bytes)); }
  boost::asio::awaitable<bool> prime() override {
    return write("id: " + std::to_string(next_event_id()) + "\ndata: \n\n");
  }

 private:
  boost::asio::awaitable<bool> write(std::string text) {
    // A client that stops reading its stream is dropped instead of pinning the connection.
    boost::beast::get_lowest_layer(stream_).expires_after(write_timeout_);
    auto [ec, n] = co_await boost::asio::async_write(
        stream_, boost::beast::http::make_chunk(boost::asio::buffer(text)),
        boost::asio::as_tuple(boost::asio::use_awaitable));
    boost::beast::get_lowest_layer(stream_).expires_never();
    co_return !ec;
  }
  Stream& stream_;
  std::chrono::seconds write_timeout_;
};

}  // namespace sandgate::server
