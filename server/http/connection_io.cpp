#include "connection_io.hpp"

#include <sys/socket.h>

#include <algorithm>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <cerrno>

namespace sandgate::server {
namespace asio = boost::asio;
namespace beast = boost::beast;
using tcp = asio::ip::tcp;
constexpr auto kTuple = asio::as_tuple(asio::use_awaitable);

// The key a client's connections are counted under: its IPv4 address, or its IPv6 /64 (one
// host usually holds a whole /64 and could otherwise rotate through it).
asio::ip::address client_key(const asio::ip::address& address) {
  if (!address.is_v6()) return address;
  auto v6 = address.to_v6();
  if (v6.is_v4_mapped()) return asio::ip::make_address_v4(asio::ip::v4_mapped, v6);
  auto bytes = v6.to_bytes();
  std::fill(bytes.begin() + 8, bytes.end(), 0);
  return asio::ip::address_v6(bytes);
}

// After refusing a request whose body was never read: closing a socket with unread input makes
// the kernel send a reset, which can destroy the refusal before the client reads it. Read and
// discard for a short, bounded while (one small buffer, never kept) so that it arrives.
asio::awaitable<void> discard_briefly(beast::tcp_stream& stream) {
  char sink[16 * 1024];
  std::size_t total = 0;
  stream.expires_after(std::chrono::seconds(2));
  while (total < (1u << 20)) {
    auto [ec, n] = co_await stream.async_read_some(asio::buffer(sink), kTuple);
    if (ec) break;
    total += n;
  }
  stream.expires_never();
}

// While a request is handled nobody reads its connection, so a client that closes it would go
// unnoticed until the answer is written. This waits for the connection to become readable and
// peeks: zero bytes is the client's FIN, reported to `client`; bytes (a pipelined request)
// end the watch without consuming them. Ends with an error when the handler is done (the
// socket's waits are cancelled).
asio::awaitable<void> watch_for_close(tcp::socket& socket, std::shared_ptr<CancelSignal> client,
                                      std::shared_ptr<bool> finished) {
  for (;;) {
    auto [ec] = co_await socket.async_wait(tcp::socket::wait_read, kTuple);
    if (ec || *finished) co_return;
    char byte;
    ssize_t n = ::recv(socket.native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
      client->cancel();
      co_return;
    }
    if (n > 0) co_return;
  }
}

}  // namespace sandgate::server
