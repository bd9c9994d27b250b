// Per-call latency of `bash -c true`, `python3 -c pass` and `node -e 0` in a warm sandbox,
// against the same programs spawned bare on the host (the floor), interleaved in one run; and
// the cost of creating and ending a sandbox. Writes Markdown and JSON.
//
//   sandbox_bench [iterations] [output directory]
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <thread>
#include <vector>

#include "bench/common/await.hpp"
#include "bench/common/measure.hpp"
#include "sandbox/host.hpp"
#include "sandbox/inside/supervisor.hpp"

namespace sb = sandgate::sandbox;
using namespace sandgate::bench;
using nlohmann::json;

namespace {

struct Program {
  const char* name;
  sb::Language language;
  const char* code;
  std::vector<std::string> bare;  // the same program on the host, by absolute path
};

}  // namespace

int main(int argc, char** argv) {
  if (sb::is_supervisor_invocation(argc, argv)) sb::supervisor_main(argc, argv);
  signal(SIGPIPE, SIG_IGN);
  int iterations = argc > 1 ? std::atoi(argv[1]) : 200;
  std::filesystem::path out_dir = argc > 2 ? argv[2] : "bench/results";

  boost::asio::io_context io;
  sb::HostConfig config;
  sb::SandboxHost host(io.get_executor(), config);
  if (!host.isolation().usable()) {
    std::cerr << "sandboxes unavailable: " << host.isolation().problem << "\n";
    return 1;
  }
  std::vector<Program> programs = {
      {"bash `true`", sb::Language::bash, "true", {"/usr/bin/bash", "-c", "true"}},
      {"python `pass`", sb::Language::python, "pass", {"/usr/bin/python3", "-c", "pass"}},
      {"node `0`", sb::Language::javascript, "0", {"/usr/bin/node", "-e", "0"}},
  };

  json results = {{"machine", machine()}, {"iterations", iterations}, {"workloads", json::array()}};
  auto sandbox = await(io, host.create(config.limits));
  for (const auto& p : programs) {
    std::vector<double> floor, warm;
    sb::RunRequest request;
    request.language = p.language;
    request.code = p.code;
    request.timeout = std::chrono::seconds(30);
    for (int i = 0; i < 5; ++i) await(io, sandbox->run(request));  // warm the page cache
    // Interleaved, so drift on the machine hits both sides alike.
    for (int i = 0; i < iterations; ++i) {
      floor.push_back(run_bare(p.bare));
      auto start = Clock::now();
      auto r = await(io, sandbox->run(request));
      warm.push_back(ms_since(start));
      if (r.exit_code != 0) {
        std::cerr << p.name << ": exit " << r.exit_code << " " << r.stderr_text << "\n";
        return 1;
      }
    }
    Stats f = stats(floor), w = stats(warm);
    results["workloads"].push_back(
        {{"name", p.name},
         {"floor_ms", {{"p50", f.p50}, {"p90", f.p90}, {"p99", f.p99}}},
         {"sandbox_ms", {{"p50", w.p50}, {"p90", w.p90}, {"p99", w.p99}}},
         {"overhead_p50_ms", w.p50 - f.p50},
         {"ratio_p50", w.p50 / f.p50}});
  }
  sandbox->end(sb::EndReason::closed);

  std::vector<double> lifecycle;
  for (int i = 0; i < std::max(20, iterations / 4); ++i) {
    auto start = Clock::now();
    auto s = await(io, host.create(config.limits));
    s->end(sb::EndReason::closed);
    lifecycle.push_back(ms_since(start));
  }
  Stats c = stats(lifecycle);
  results["create_and_end_ms"] = {{"p50", c.p50}, {"p90", c.p90}, {"p99", c.p99}};
  host.shutdown();

  std::filesystem::create_directories(out_dir);
  std::ofstream(out_dir / "sandbox.json") << results.dump(2) << "\n";
  std::ofstream md(out_dir / "sandbox.md");
  md << "Machine: " << results["machine"].get<std::string>() << "; " << iterations
     << " calls per program, interleaved with the floor.\n\n"
     << "| program | floor p50 ms | sandbox p50 ms | overhead p50 ms | sandbox/floor | floor p99 | "
        "sandbox p99 |\n"
     << "|---|---|---|---|---|---|---|\n";
  char line[256];
  for (const auto& w : results["workloads"]) {
    std::snprintf(line, sizeof line, "| %s | %.2f | %.2f | %+.2f | %.2f | %.2f | %.2f |\n",
                  w["name"].get<std::string>().c_str(), w["floor_ms"]["p50"].get<double>(),
                  w["sandbox_ms"]["p50"].get<double>(), w["overhead_p50_ms"].get<double>(),
                  w["ratio_p50"].get<double>(), w["floor_ms"]["p99"].get<double>(),
                  w["sandbox_ms"]["p99"].get<double>());
    md << line;
  }
  std::snprintf(line, sizeof line,
                "\nCreate + end a sandbox: p50 %.2f ms, p90 %.2f ms, p99 %.2f ms.\n", c.p50, c.p90,
                c.p99);
  md << line;
  md.close();
  std::cout << std::ifstream(out_dir / "sandbox.md").rdbuf();
  return 0;
}
