#include "egress/name_lookup.hpp"

#include <netdb.h>
#include <sys/socket.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <cstring>
#include <memory>

namespace sandgate::egress {
namespace asio = boost::asio;

namespace {

// Never destroyed: a lookup still blocked when the gateway exits must not hold up its exit (a
// thread_pool's destructor joins its threads).
asio::thread_pool& lookup_threads() {
  static auto* pool = new asio::thread_pool(kLookupThreads);
  return *pool;
}

// Runs on a lookup thread.
asio::awaitable<std::vector<asio::ip::address>> blocking_look_up(std::string host) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  std::vector<asio::ip::address> addresses;
  if (::getaddrinfo(host.c_str(), nullptr, &hints, &found) != 0) co_return addresses;
  std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)> owned(found, &::freeaddrinfo);
  for (const addrinfo* a = found; a != nullptr; a = a->ai_next) {
    if (a->ai_family == AF_INET) {
      const auto* in = reinterpret_cast<const sockaddr_in*>(a->ai_addr);
      asio::ip::address_v4::bytes_type bytes;
      std::memcpy(bytes.data(), &in->sin_addr, bytes.size());
      addresses.emplace_back(asio::ip::address_v4(bytes));
    } else if (a->ai_family == AF_INET6) {
      const auto* in6 = reinterpret_cast<const sockaddr_in6*>(a->ai_addr);
      asio::ip::address_v6::bytes_type bytes;
      std::memcpy(bytes.data(), &in6->sin6_addr, bytes.size());
      addresses.emplace_back(asio::ip::address_v6(bytes));
    }
  }
  co_return addresses;
}

}  // namespace

asio::awaitable<std::vector<asio::ip::address>> look_up(std::string host) {
  auto lookup =
      asio::co_spawn(lookup_threads(), blocking_look_up(std::move(host)), asio::use_awaitable);
  co_return co_await std::move(lookup);
}

}  // namespace sandgate::egress
