#pragma once
// The soak's random mix of client behaviour. Each scenario sends well-formed or deliberately bad
// requests and checks the answer against what the spec and sandgate's contract say it must be.
#include <boost/asio/awaitable.hpp>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "tests/support/mcp_client.hpp"

namespace sandgate::soak {

struct Tally {
  std::map<std::string, long> done;  // per scenario
  long wrong_answers = 0;            // a well-formed request got an answer it must not get
  long transport_errors = 0;         // connection failures (never expected on loopback)
  // Refused for a full cap (sessions, sandboxes, memory): caps make room, so never expected.
  long cap_refusals = 0;
  long abandoned = 0;  // sessions left without DELETE
  std::vector<std::string> first_problems;
  void wrong(const std::string& scenario, const std::string& what);
  void transport(const std::string& scenario, const std::string& what);
  void refused_for_cap(const std::string& scenario, const std::string& what);
};

// How a simulated client behaves. `mixed`: a random mix of good and bad requests, one session
// kept until something ends it. `abandoning`: like most real clients, a new session for each
// short task (a file written, read back), then gone without DELETE most of the time.
enum class Behaviour { mixed, abandoning };

// One simulated client: holds (at most) one session and two connections, and plays scenarios
// until the deadline.
class Actor {
 public:
  Actor(boost::asio::any_io_executor executor, boost::asio::ip::tcp::endpoint server,
        std::string token, unsigned seed, Tally& tally, Behaviour behaviour = Behaviour::mixed);
  boost::asio::awaitable<void> run(std::chrono::steady_clock::time_point deadline);

 private:
  boost::asio::awaitable<void> play_one();
  boost::asio::awaitable<void> ensure_session();
  boost::asio::awaitable<void> arithmetic();
  boost::asio::awaitable<void> python_sum();
  boost::asio::awaitable<void> exit_status();
  boost::asio::awaitable<void> workspace_persists();
  boost::asio::awaitable<void> big_output();
  boost::asio::awaitable<void> timeout();
  boost::asio::awaitable<void> cancel_mid_call();
  boost::asio::awaitable<void> delete_mid_call();
  boost::asio::awaitable<void> abandon_session();
  boost::asio::awaitable<void> delete_session();
  boost::asio::awaitable<void> bad_request();
  boost::asio::awaitable<void> short_task_then_leave();

  // tools/call execute with the reply unchecked.
  boost::asio::awaitable<test::McpClient::Reply> call(test::McpClient& client, int id,
                                                      const std::string& language,
                                                      const std::string& code, int timeout);
  boost::asio::awaitable<void> pause(std::chrono::milliseconds how_long);
  void expect(bool ok, const std::string& scenario, const std::string& what);

  boost::asio::any_io_executor executor_;
  std::string token_;
  test::McpClient main_, side_;  // side_: the second connection for cancel / DELETE mid-call
  std::mt19937 random_;
  Tally& tally_;
  const Behaviour behaviour_;
  std::string session_;
  std::string workspace_value_;  // what /work/value holds in this session's sandbox, if set
};

}  // namespace sandgate::soak
