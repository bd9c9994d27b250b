#include "bench/load/driver.hpp"

#include <atomic>
#include <memory>
#include <mutex>
#include <thread>

#include "bench/common/measure.hpp"

namespace sandgate::bench {

void RunResult::merge(const RunResult& other) {
  latencies_ms.insert(latencies_ms.end(), other.latencies_ms.begin(), other.latencies_ms.end());
  elapsed_s += other.elapsed_s;
  errors += other.errors;
  if (first_error.empty()) first_error = other.first_error;
}

namespace {

asio::awaitable<void> worker(McpClient& client, int& next, int total, const Operation& operation,
                             RunResult& result) {
  for (int index = next++; index < total; index = next++) {
    auto start = Clock::now();
    try {
      co_await operation(client, index);
      result.latencies_ms.push_back(ms_since(start));
    } catch (const std::exception& e) {
      if (result.errors++ == 0) result.first_error = e.what();
    }
  }
}

}  // namespace

RunResult run_concurrently(asio::io_context& io, asio::ip::tcp::endpoint server,
                           const std::string& token, int concurrency, int total,
                           const Operation& operation) {
  std::vector<std::unique_ptr<McpClient>> clients;
  for (int i = 0; i < concurrency; ++i)
    clients.push_back(std::make_unique<McpClient>(io.get_executor(), server, token));
  RunResult result;
  int next = 0;
  int running = concurrency;
  auto start = Clock::now();
  for (auto& client : clients)
    asio::co_spawn(io, worker(*client, next, total, operation, result),
                   [&running](std::exception_ptr) { --running; });
  io.restart();
  while (running > 0) io.run_one();
  result.elapsed_s = ms_since(start) / 1000;
  return result;
}

RunResult floor_concurrently(int concurrency, int total, const std::vector<std::string>& argv) {
  RunResult result;
  std::mutex mutex;
  std::atomic<int> next{0};
  auto start = Clock::now();
  std::vector<std::thread> threads;
  for (int t = 0; t < concurrency; ++t)
    threads.emplace_back([&] {
      while (next++ < total) {
        double ms = run_bare(argv);
        std::lock_guard lock(mutex);
        if (ms >= 0)
          result.latencies_ms.push_back(ms);
        else if (result.errors++ == 0)
          result.first_error = "spawn failed";
      }
    });
  for (auto& t : threads) t.join();
  result.elapsed_s = ms_since(start) / 1000;
  return result;
}

}  // namespace sandgate::bench
