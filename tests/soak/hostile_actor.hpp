#pragma once
// The soak's hostile client: raw-socket requests a browser page, a scanner or an attacker sends
// (deep JSON nesting, smuggled content types, loopback look-alike Origin and Host, bodies that
// are oversized, slow or never sent, without a token), mixed in with the ordinary clients. Each
// must get its refusal while the gateway keeps serving everyone else with bounded memory.
#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <random>
#include <string>

#include "tests/soak/scenarios.hpp"

namespace sandgate::soak {

class HostileActor {
 public:
  HostileActor(boost::asio::any_io_executor executor, boost::asio::ip::tcp::endpoint server,
               std::string token, std::uint64_t body_limit, unsigned seed, Tally& tally);
  boost::asio::awaitable<void> run(std::chrono::steady_clock::time_point deadline);

 private:
  struct Answer {
    int status = 0;    // 0: the connection closed without a status line
    std::string head;  // status line and headers
    std::string body;  // whatever of the body arrived
  };
  // Sends `request` on a fresh connection (then, when `trickle` is set, one more byte per
  // 100 ms until an answer arrives) and reads the answer's status line and headers.
  boost::asio::awaitable<Answer> exchange(std::string request, bool trickle = false);
  std::string post_head(const std::string& extra_headers, std::size_t content_length,
                        bool with_token) const;

  boost::asio::awaitable<void> deep_arrays();
  boost::asio::awaitable<void> deep_objects();
  boost::asio::awaitable<void> smuggled_content_type();
  boost::asio::awaitable<void> look_alike_origin();
  boost::asio::awaitable<void> look_alike_host();
  boost::asio::awaitable<void> huge_body_without_token();
  boost::asio::awaitable<void> slow_body_without_token();
  boost::asio::awaitable<void> over_limit_body();
  void expect(bool ok, const std::string& scenario, const Answer& answer);

  boost::asio::any_io_executor executor_;
  boost::asio::ip::tcp::endpoint server_;
  std::string token_;
  std::uint64_t body_limit_;
  std::mt19937 random_;
  Tally& tally_;
};

}  // namespace sandgate::soak
