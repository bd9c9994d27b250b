#pragma once
// What a connection does around a request beside reading and writing it: the address its
// connections are counted under, noticing a client that leaves while its request is handled,
// and draining unread input before a close so that a refusal reaches the client.
#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <memory>

#include "common/cancel_signal.hpp"

namespace sandgate::server {

// The key a client's connections are counted under: its IPv4 address, or its IPv6 /64.
boost::asio::ip::address client_key(const boost::asio::ip::address& address);

// Reads and discards a refused request's unread input for a short, bounded while.
boost::asio::awaitable<void> discard_briefly(boost::beast::tcp_stream& stream);

// Fires `client` when the peer closes the connection while its request is handled; ends when
// `finished` is set and the socket's waits are cancelled, or at the first byte of a pipelined
// request (left unread).
boost::asio::awaitable<void> watch_for_close(boost::asio::ip::tcp::socket& socket,
                                             std::shared_ptr<CancelSignal> client,
                                             std::shared_ptr<bool> finished);

}  // namespace sandgate::server
