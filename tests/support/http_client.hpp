#pragma once
// HTTP/1.1 over a loopback socket, as the MCP clients of the tests and the benchmark speak it:
// a kept-alive connection driven by coroutines (many clients on one thread), and one-shot
// blocking requests built on the same code for tests that send one request at a time. Nothing
// here adds a header the caller did not ask for (but Host): tests send deliberately wrong ones.
#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/verb.hpp>
#include <chrono>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>

namespace sandgate::test {

namespace asio = boost::asio;
namespace http = boost::beast::http;
using nlohmann::json;

// Request headers, set in this order after Host (one of them may replace Host).
using Headers = std::map<std::string, std::string>;

struct HttpReply {
  int status = 0;
  std::map<std::string, std::string> headers;  // lower-case names
  std::string body;
  json json_body() const { return json::parse(body); }
};

class HttpConnection {
 public:
  struct Options {
    std::chrono::milliseconds connect_timeout = std::chrono::seconds(30);
    // A call may legitimately run long (an output flood); the deadline only guards a wedge.
    std::chrono::milliseconds exchange_timeout = std::chrono::seconds(300);
    bool no_delay = true;  // many small requests on one connection: no Nagle wait
  };
  HttpConnection(asio::any_io_executor executor, asio::ip::tcp::endpoint server);
  HttpConnection(asio::any_io_executor executor, asio::ip::tcp::endpoint server, Options options);

  // Sends one request and reads its whole answer (bodies up to 64 MiB). A kept-alive connection
  // the server closed while idle (its keep-alive limit) is reopened once, and only when no byte
  // of an answer came, as HTTP clients do. Throws boost::system::system_error otherwise.
  asio::awaitable<HttpReply> exchange(http::verb verb, const std::string& target,
                                      const std::string& body, const Headers& headers);
  // Sends one request and reads nothing: a client that is about to go away.
  asio::awaitable<void> send_only(http::verb verb, const std::string& target,
                                  const std::string& body, const Headers& headers);
  void close();

 private:
  asio::awaitable<void> ensure_connected();

  asio::ip::tcp::endpoint server_;
  Options options_;
  boost::beast::tcp_stream stream_;
  boost::beast::flat_buffer buffer_;
  bool connected_ = false;
  bool reused_ = false;  // the connection has carried a whole request and answer already
};

// One request on a connection of its own, blocking, `timeout` for connecting and again for the
// exchange. Throws on a transport error (a test may expect the connection to die).
HttpReply http_request(asio::ip::tcp::endpoint server, http::verb verb, const std::string& target,
                       const std::string& body = {}, const Headers& headers = {},
                       std::chrono::milliseconds timeout = std::chrono::seconds(60));

// GET of `path` (Host: 127.0.0.1, 5 s): the status and the body; status 0 if unreachable.
std::pair<int, std::string> http_get(asio::ip::tcp::endpoint server, const std::string& path);

// Sends a request on a connection of its own, keeps that connection without reading the answer
// until `until` holds or `limit` passes, then closes it: a client that goes away mid-call.
// Whether `until` held.
bool send_and_hold(asio::ip::tcp::endpoint server, http::verb verb, const std::string& target,
                   const std::string& body, const Headers& headers,
                   const std::function<bool()>& until, std::chrono::milliseconds limit);

}  // namespace sandgate::test
