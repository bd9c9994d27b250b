#pragma once
// The gateway benchmark's workloads. Each runs against sandgate, the peer and the floor in the
// same run (interleaved where the workload allows) and returns its Markdown table and JSON.
#include <boost/asio/io_context.hpp>
#include <nlohmann/json.hpp>
#include <string>

#include "tests/support/server_process.hpp"

namespace sandgate::bench {

using test::ServerProcess;

struct Settings {
  int warm_calls = 1000;     // per language
  int churn_sessions = 320;  // per concurrency level, all rounds together
  int many_sessions = 64;
  int many_calls = 50;  // per session
  int idle_sessions = 10000;
  int live_sandboxes = 500;
  long flood_bytes = 100'000'000;
  int rounds = 3;           // throughput and flood workloads alternate targets this often
  static Settings quick();  // a smoke run: every workload, small counts
};

struct BenchContext {
  boost::asio::io_context& io;
  ServerProcess& sandgate;
  ServerProcess& peer;
  std::string token;
  Settings settings;
};

struct Section {
  std::string markdown;
  nlohmann::json data;
};

Section warm_calls(BenchContext& context);
Section session_churn(BenchContext& context, int concurrency);
Section many_sessions(BenchContext& context);
Section idle_sessions(BenchContext& context);
Section output_flood(BenchContext& context);
Section protocol_eras(BenchContext& context);

// "%.2f" and friends, for the tables.
std::string fixed(double value, int decimals = 2);

}  // namespace sandgate::bench
