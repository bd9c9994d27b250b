// Warm starts (issue #29): a new session's first call with the pool of ready sandboxes on and
// off, against the TypeScript SDK peer and the bare floor, side by side in one run (interleaved
// sample by sample); a churn of new sessions that are abandoned after their first call, at the
// pool's size and beyond it. Writes pool.md and pool.json.
//
//   pool_bench --sandgate PATH [--peer-dir DIR] [--node PATH] [--out DIR] [--samples N]
#include <signal.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <thread>

#include "bench/common/measure.hpp"
#include "bench/load/driver.hpp"
#include "tests/support/host_probe.hpp"
#include "tests/support/http_client.hpp"
#include "tests/support/server_process.hpp"

namespace bench = sandgate::bench;
using bench::Clock;
using bench::ms_since;
using nlohmann::json;
using sandgate::test::ServerProcess;

namespace {

struct Options {
  std::string sandgate;
  std::string peer_dir = "bench/peers";
  std::string node = "/usr/bin/node";
  std::filesystem::path out = "bench/results";
  int samples = 20;
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
    else if (arg == "--samples")
      o.samples = std::max(1, std::stoi(value()));
    else
      throw std::invalid_argument("unknown option " + arg);
  }
  if (o.sandgate.empty()) throw std::invalid_argument("--sandgate PATH is required");
  return o;
}

// One /metrics value (exact name with labels); -1 when absent or unreachable.
double metric(const ServerProcess& server, const std::string& name) {
  auto [status, body] = sandgate::test::http_get(server.endpoint(), "/metrics");
  if (status != 200) return -1;
  std::istringstream lines(body);
  for (std::string line; std::getline(lines, line);)
    if (line.rfind(name + " ", 0) == 0) return std::stod(line.substr(name.size() + 1));
  return -1;
}

bool wait_for_pool(const ServerProcess& server, double ready) {
  auto give_up = Clock::now() + std::chrono::seconds(120);
  while (Clock::now() < give_up) {
    if (metric(server, "sandgate_pool_ready") >= ready) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

// Host memory held by a process tree below `root` (not root itself): the sum of each process's
// proportional set size (shared pages divided among their users) and of its resident set, in
// KiB, from /proc/PID/smaps_rollup. With the pool full and no session, the gateway's
// descendants are exactly the ready sandboxes (supervisors, their interpreters).
struct TreeMemory {
  double pss_kib = 0, rss_kib = 0;
  int processes = 0;
};

TreeMemory descendants_memory(pid_t root) {
  TreeMemory total;
  for (const auto& process : sandgate::test::descendants_of(root)) {
    std::string text =
        sandgate::test::read_proc("/proc/" + std::to_string(process.pid) + "/smaps_rollup");
    if (text.empty()) continue;  // gone meanwhile, or unreadable: not counted as 0 MiB
    std::istringstream rollup(text);
    // "Rss:   1234 kB" lines after a header line naming the address range.
    for (std::string line; std::getline(rollup, line);) {
      std::istringstream fields(line);
      std::string key;
      double kib = 0;
      if (!(fields >> key >> kib)) continue;
      if (key == "Pss:") total.pss_kib += kib;
      if (key == "Rss:") total.rss_kib += kib;
    }
    ++total.processes;
  }
  return total;
}

struct Workload {
  const char* name;
  const char* language;
  const char* code;
  std::vector<std::string> floor;  // the same program spawned bare on the host, cold
};

const Workload kWorkloads[] = {
    {"bash `true`", "bash", "true", {"/bin/bash", "-c", "true"}},
    {"python `print(1)`", "python", "print(1)", {"/usr/bin/python3", "-c", "print(1)"}},
    {"python `import pandas`",
     "python",
     "import pandas",
     {"/usr/bin/python3", "-c", "import pandas"}},
};

struct Samples {
  std::vector<double> first, warm;
  int errors = 0;
};

// A new session's first call (initialize untimed), then the same call again (warm); the
// session is ended after.
void first_call(boost::asio::io_context& io, const ServerProcess& server, const std::string& token,
                const Workload& w, Samples& out) {
  try {
    bench::McpClient client(io.get_executor(), server.endpoint(), token);
    auto session = bench::await(io, client.initialize());
    auto start = Clock::now();
    bench::await(io, client.execute(session, w.language, w.code));
    out.first.push_back(ms_since(start));
    start = Clock::now();
    bench::await(io, client.execute(session, w.language, w.code));
    out.warm.push_back(ms_since(start));
    bench::await(io, client.end(session));
  } catch (const std::exception& e) {
    if (out.errors++ == 0) std::cerr << "pool_bench: " << e.what() << "\n";
  }
}

std::string fixed(double value, int decimals = 1) {
  char text[64];
  std::snprintf(text, sizeof text, "%.*f", decimals, value);
  return text;
}

json stats_json(const std::vector<double>& samples) {
  auto s = bench::stats(samples);
  return {{"p50_ms", s.p50}, {"p90_ms", s.p90}, {"count", s.count}};
}

}  // namespace

int main(int argc, char** argv) {
  signal(SIGPIPE, SIG_IGN);
  Options o;
  try {
    o = parse(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "pool_bench: " << e.what() << "\n";
    return 2;
  }
  const std::string token = "pool-bench-token";
  const sandgate::test::LaunchOptions launch{.ready_path = "/readyz",
                                             .ready_limit = std::chrono::seconds(30),
                                             .stop_grace = std::chrono::seconds(30)};
  // Host uids of their own for each gateway's sandboxes (the same ones would share
  // RLIMIT_NPROC counts).
  auto gateway = [&](const std::string& name, const std::string& pool_size,
                     const std::string& uid_base) {
    return std::make_unique<ServerProcess>(
        name,
        std::vector<std::string>{o.sandgate, "--listen", "127.0.0.1:0", "--log-level", "warn",
                                 "--pool-size", pool_size, "--sandbox-uid-base", uid_base},
        std::vector<std::string>{"SANDGATE_TOKEN=" + token, "PATH=/usr/bin:/bin"}, launch);
  };
  auto pooled = gateway("sandgate (pool on)", "2", "1000000");
  auto unpooled = gateway("sandgate (pool off)", "0", "2000000");
  sandgate::test::LaunchOptions peer_launch;
  peer_launch.stop_grace = std::chrono::seconds(30);
  ServerProcess peer("peer", {o.node, o.peer_dir + "/ts_sdk_server.mjs", "0", token},
                     {"PATH=/usr/bin:/bin", "NODE_ENV=production"}, peer_launch);
  if (!wait_for_pool(*pooled, 2)) {
    std::cerr << "pool_bench: the pool never filled\n";
    return 1;
  }
  // Host memory per ready sandbox: the pooled gateway's descendants with the pool full and no
  // session yet (after the run they would include the churn's abandoned sessions).
  const TreeMemory ready = descendants_memory(pooled->pid());
  const double pool_size = 2;
  boost::asio::io_context io;
  json report = {
      {"machine", bench::machine()}, {"samples", o.samples}, {"first_calls", json::array()}};
  std::string md =
      "# Warm starts: the pool of ready sandboxes (bench/pool_bench.cpp)\n\n"
      "Machine: " +
      bench::machine() + ". " + std::to_string(o.samples) +
      " new sessions per row and target, interleaved; a sample with the pool on "
      "waits until the pool is full again (a new conversation at the pool's pace). "
      "First call: the session's first `execute` (initialize not timed); warm: the "
      "same call again in that session. Floor: the program spawned bare on the host, "
      "cold.\n\n"
      "### New session, first call\n\n"
      "| call | pool on p50 ms | pool off p50 ms | peer p50 ms | floor p50 ms | warm "
      "(pool on) p50 ms | on/off | on/floor | first/warm (on) |\n"
      "|---|---|---|---|---|---|---|---|---|\n";
  int errors = 0;
  for (const auto& w : kWorkloads) {
    Samples on, off, theirs;
    std::vector<double> floor;
    for (int i = 0; i < o.samples; ++i) {
      if (!wait_for_pool(*pooled, 2)) ++on.errors;
      first_call(io, *pooled, token, w, on);
      // The pool's refill (the data stack's imports) must not run beside the others' samples.
      if (!wait_for_pool(*pooled, 2)) ++on.errors;
      first_call(io, *unpooled, token, w, off);
      first_call(io, peer, token, w, theirs);
      if (double bare = bench::run_bare(w.floor); bare >= 0)
        floor.push_back(bare);
      else
        ++theirs.errors;
    }
    errors += on.errors + off.errors + theirs.errors;
    auto p50 = [](const std::vector<double>& v) { return bench::stats(v).p50; };
    double on50 = p50(on.first), off50 = p50(off.first), floor50 = p50(floor);
    report["first_calls"].push_back({{"call", w.name},
                                     {"pool_on", stats_json(on.first)},
                                     {"pool_off", stats_json(off.first)},
                                     {"peer", stats_json(theirs.first)},
                                     {"floor", stats_json(floor)},
                                     {"warm_pool_on", stats_json(on.warm)},
                                     {"ratio_on_off", on50 / off50},
                                     {"ratio_on_floor", on50 / floor50},
                                     {"ratio_first_warm_on", on50 / p50(on.warm)},
                                     {"errors", on.errors + off.errors + theirs.errors}});
    md += "| " + std::string(w.name) + " | " + fixed(on50) + " | " + fixed(off50) + " | " +
          fixed(p50(theirs.first)) + " | " + fixed(floor50) + " | " + fixed(p50(on.warm)) + " | " +
          fixed(on50 / off50, 3) + " | " + fixed(on50 / floor50, 3) + " | " +
          fixed(on50 / p50(on.warm), 2) + " |\n";
    std::cerr << "pool_bench: " << w.name << " done\n";
  }

  // Churn: new session → first call → abandoned (never ended), back to back, as clients that
  // never end their sessions do. Within the pool's size every one is a hit; beyond it the pool
  // refills at its own pace and the rest are built on demand.
  md +=
      "\n### Churn: new session → first call (python `print(1)`) → abandoned, back to back\n\n"
      "| sessions | pool on p50 ms | pool on p90 ms | hits | pool off p50 ms |\n"
      "|---|---|---|---|---|\n";
  report["churn"] = json::array();
  for (int sessions : {2, 4 * std::max(2, o.samples / 4)}) {
    if (!wait_for_pool(*pooled, 2)) ++errors;
    double hits_before = metric(*pooled, "sandgate_pool_takes_total{result=\"hit\"}");
    auto churn = [&](const ServerProcess& target) {
      std::vector<double> latencies;
      for (int i = 0; i < sessions; ++i) {
        try {
          bench::McpClient client(io.get_executor(), target.endpoint(), token);
          auto start = Clock::now();
          auto session = bench::await(io, client.initialize());
          bench::await(io, client.execute(session, "python", "print(1)"));
          latencies.push_back(ms_since(start));
        } catch (const std::exception& e) {
          if (errors++ == 0) std::cerr << "pool_bench: " << e.what() << "\n";
        }
      }
      return latencies;
    };
    auto on = churn(*pooled);
    double hits = metric(*pooled, "sandgate_pool_takes_total{result=\"hit\"}") - hits_before;
    if (!wait_for_pool(*pooled, 2)) ++errors;  // its refills done before the other target runs
    auto off = churn(*unpooled);
    report["churn"].push_back({{"sessions", sessions},
                               {"pool_on", stats_json(on)},
                               {"pool_off", stats_json(off)},
                               {"hits", hits}});
    md += "| " + std::to_string(sessions) + " | " + fixed(bench::stats(on).p50) + " | " +
          fixed(bench::stats(on).p90) + " | " + fixed(hits, 0) + " | " +
          fixed(bench::stats(off).p50) + " |\n";
  }

  md +=
      "\n### Host memory per ready sandbox\n\n"
      "| preload | processes per sandbox | PSS MiB per sandbox | RSS MiB per sandbox |\n"
      "|---|---|---|---|\n"
      "| numpy, pandas, matplotlib.pyplot (the default) | " +
      fixed(ready.processes / pool_size, 1) + " | " + fixed(ready.pss_kib / 1024 / pool_size) +
      " | " + fixed(ready.rss_kib / 1024 / pool_size) +
      " |\n\n"
      "PSS divides pages shared between processes (the interpreters' libraries) among them; RSS "
      "counts them in full for each. Measured from /proc/PID/smaps_rollup of the pooled "
      "gateway's descendants with the pool full and no session.\n";
  report["ready_sandbox_memory"] = {{"pss_mib", ready.pss_kib / 1024 / pool_size},
                                    {"rss_mib", ready.rss_kib / 1024 / pool_size},
                                    {"processes", ready.processes / pool_size}};
  if (ready.processes == 0) ++errors;

  unpooled.reset();  // its abandoned sessions' sandboxes go with it
  report["errors"] = errors;
  report["sandgate_exit_status"] = pooled->stop_or_kill();
  peer.stop_or_kill();
  std::filesystem::create_directories(o.out);
  std::ofstream(o.out / "pool.json") << report.dump(2) << "\n";
  std::ofstream(o.out / "pool.md") << md;
  std::cout << md;
  return errors > 0 ? 1 : 0;
}
