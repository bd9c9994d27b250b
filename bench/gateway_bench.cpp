// The gateway benchmark: sandgate, the TypeScript SDK peer and the floor side by side, over
// real loopback HTTP, in one run. Writes gateway.md and gateway.json to the output directory.
//
//   gateway_bench --sandgate PATH [--peer-dir DIR] [--node PATH] [--out DIR] [--quick]
//                 [--workloads churn,warm,many,flood,idle,eras] [--warm-calls N]
//
// --quick runs every workload with small counts (the test suite's smoke run); --workloads
// picks some (for profiling one); the committed results always come from a full run. The exit
// status is 1 if any operation failed, so a broken target never yields a quiet table.
#include <openssl/rand.h>
#include <signal.h>

#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "bench/common/measure.hpp"
#include "bench/load/workloads.hpp"

namespace bench = sandgate::bench;
using nlohmann::json;

namespace {

struct Options {
  std::string sandgate;
  std::string peer_dir = "bench/peers";
  std::string node = "/usr/bin/node";
  std::filesystem::path out = "bench/results";
  bool quick = false;
  std::string workloads = "churn,warm,many,flood,idle,eras";
  int warm_calls = 0;  // 0: the settings' default
};

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw std::invalid_argument(arg + " needs a value");
      return argv[++i];
    };
    if (arg == "--sandgate")
      o.sandgate = value();
    else if (arg == "--peer-dir")
      o.peer_dir = value();
    else if (arg == "--node")
      o.node = value();
    else if (arg == "--out")
      o.out = value();
    else if (arg == "--quick")
      o.quick = true;
    else if (arg == "--workloads")
      o.workloads = value();
    else if (arg == "--warm-calls")
      o.warm_calls = std::stoi(value());
    else
      throw std::invalid_argument("unknown option " + arg);
  }
  if (o.sandgate.empty()) throw std::invalid_argument("--sandgate PATH is required");
  return o;
}

std::string random_token() {
  unsigned char bytes[24];
  if (RAND_bytes(bytes, sizeof bytes) != 1) throw std::runtime_error("RAND_bytes");
  std::string hex;
  for (unsigned char b : bytes) {
    static const char* digits = "0123456789abcdef";
    hex += digits[b >> 4];
    hex += digits[b & 15];
  }
  return hex;
}

int count_errors(const json& node) {
  int errors = 0;
  if (node.is_object())
    for (auto& [key, value] : node.items())
      errors +=
          (key.ends_with("errors") && value.is_number()) ? value.get<int>() : count_errors(value);
  else if (node.is_array())
    for (const auto& value : node) errors += count_errors(value);
  return errors;
}

std::string today() {
  char text[32];
  std::time_t now = std::time(nullptr);
  std::strftime(text, sizeof text, "%Y-%m-%d", std::gmtime(&now));
  return text;
}

}  // namespace

int run(const Options& options, const bench::Settings& settings,
        const sandgate::test::LaunchOptions& sandgate_launch,
        const sandgate::test::LaunchOptions& peer_launch);

int main(int argc, char** argv) {
  signal(SIGPIPE, SIG_IGN);
  Options options;
  try {
    options = parse(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "gateway_bench: " << e.what() << "\n";
    return 2;
  }
  auto settings = options.quick ? bench::Settings::quick() : bench::Settings{};
  if (options.warm_calls > 0) settings.warm_calls = options.warm_calls;
  // Both stop as they always have: 30 s after SIGTERM comes SIGKILL (stop_or_kill below).
  const sandgate::test::LaunchOptions sandgate_launch{.ready_path = "/readyz",
                                                      .ready_limit = std::chrono::seconds(10),
                                                      .stop_grace = std::chrono::seconds(30)};
  sandgate::test::LaunchOptions peer_launch;  // ready once it listens
  peer_launch.stop_grace = std::chrono::seconds(30);
  // Caught here, not left to std::terminate: a peer that cannot start (its npm packages
  // missing) must not leave sandgate running, holding the caller's output open.
  try {
    return run(options, settings, sandgate_launch, peer_launch);
  } catch (const std::exception& e) {
    std::cerr << "gateway_bench: " << e.what() << "\n";
    return 1;
  }
}

int run(const Options& options, const bench::Settings& settings,
        const sandgate::test::LaunchOptions& sandgate_launch,
        const sandgate::test::LaunchOptions& peer_launch) {
  auto wanted = [&](const char* name) {
    return ("," + options.workloads + ",").find("," + std::string(name) + ",") != std::string::npos;
  };
  std::string token = random_token();
  std::string max_sessions = std::to_string(settings.idle_sessions + 1000);
  bench::ServerProcess sandgate(
      "sandgate",
      {options.sandgate, "--listen", "127.0.0.1:0", "--log-level", "warn", "--max-sessions",
       max_sessions, "--max-sessions-per-tenant", max_sessions},
      {"SANDGATE_TOKEN=" + token, "PATH=/usr/bin:/bin"}, sandgate_launch);
  bench::ServerProcess peer("peer",
                            {options.node, options.peer_dir + "/ts_sdk_server.mjs", "0", token},
                            {"PATH=/usr/bin:/bin", "NODE_ENV=production"}, peer_launch);

  boost::asio::io_context io;
  bench::BenchContext context{io, sandgate, peer, token, settings};
  json report = {{"machine", bench::machine()},
                 {"date", today()},
                 {"quick", options.quick},
                 {"workloads", json::array()}};
  std::string markdown = "Machine: " + bench::machine() + "; run " + today() +
                         (options.quick ? " (quick smoke run: small counts)" : "") +
                         ". sandgate isolates every call in its session's sandbox; the peer "
                         "(TypeScript SDK, child_process.spawn) isolates nothing.\n\n";
  auto add = [&](bench::Section section) {
    std::cerr << "gateway_bench: " << section.data["name"].get<std::string>() << " done\n";
    report["workloads"].push_back(section.data);
    markdown += section.markdown + "\n";
  };
  try {
    if (wanted("churn")) add(bench::session_churn(context, 1));
    if (wanted("churn")) add(bench::session_churn(context, 32));
    if (wanted("warm")) add(bench::warm_calls(context));
    if (wanted("many")) add(bench::many_sessions(context));
    if (wanted("flood")) add(bench::output_flood(context));
    if (wanted("idle")) add(bench::idle_sessions(context));
    if (wanted("eras")) add(bench::protocol_eras(context));
  } catch (const std::exception& e) {
    std::cerr << "gateway_bench: a workload could not run: " << e.what() << "\n";
    return 1;
  }
  int sandgate_exit = sandgate.stop_or_kill();
  peer.stop_or_kill();
  report["sandgate_exit_status"] = sandgate_exit;

  std::filesystem::create_directories(options.out);
  std::ofstream(options.out / "gateway.json") << report.dump(2) << "\n";
  std::ofstream(options.out / "gateway.md") << markdown;
  std::cout << markdown;
  int errors = count_errors(report["workloads"]);
  if (errors > 0 || sandgate_exit != 0) {
    std::cerr << "gateway_bench: " << errors << " operations failed; sandgate exited "
              << sandgate_exit << "\n";
    return 1;
  }
  return 0;
}
