#pragma once
// What the router hands a path to. HTTP knows only this interface; the MCP endpoint is one.
#include <boost/asio/awaitable.hpp>
#include <memory>
#include <optional>

#include "common/cancel_signal.hpp"
#include "http_types.hpp"

namespace sandgate::server {

class Endpoint {
 public:
  virtual ~Endpoint() = default;
  // Called with the headers alone, before any body is read or 100 Continue sent: a refusal,
  // or nothing when the request may go on. May wait (an OAuth issuer's keys being fetched).
  virtual boost::asio::awaitable<std::optional<Response>> admit(const Request& head) = 0;
  // The whole request. `client` reports a client that goes away before the answer is written.
  virtual boost::asio::awaitable<Reply> handle(const Request& request,
                                               std::shared_ptr<CancelSignal> client) = 0;
};

}  // namespace sandgate::server
