#pragma once
// Drives operations against a server: many clients at once (one connection each) on one
// io_context thread, or the floor's bare spawns on as many threads.
#include <boost/asio/io_context.hpp>
#include <functional>
#include <string>
#include <vector>

#include "bench/common/await.hpp"
#include "tests/support/mcp_client.hpp"

namespace sandgate::bench {

// The clients are the test-support library's (tests/support), shared with the tests.
namespace asio = boost::asio;
using nlohmann::json;
using test::McpClient;
using test::McpFailure;

struct RunResult {
  std::vector<double> latencies_ms;  // successful operations only
  double elapsed_s = 0;
  int errors = 0;
  std::string first_error;
  double per_second() const { return elapsed_s > 0 ? latencies_ms.size() / elapsed_s : 0; }
  void merge(const RunResult& other);
};

using Operation = std::function<asio::awaitable<void>(McpClient&, int index)>;

// Runs operations 0..total-1 over `concurrency` clients, each taking the next index when free.
RunResult run_concurrently(asio::io_context& io, asio::ip::tcp::endpoint server,
                           const std::string& token, int concurrency, int total,
                           const Operation& operation);

// The floor of the same shape: `total` bare spawns of `argv` over `concurrency` threads.
RunResult floor_concurrently(int concurrency, int total, const std::vector<std::string>& argv);

}  // namespace sandgate::bench
