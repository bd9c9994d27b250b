// What the usage ledger and tenant budgets cost a warm call (issue #28): gateways side by side,
// one with `--ledger off` and no budget, one with the SQLite ledger and a daily budget for the
// tenant (so every call asks the budget), and — when PostgreSQL 15 is installed — one on a
// throwaway PostgreSQL cluster with the same budget (reservations). Warm bash `true` calls
// interleaved between them, who goes first rotating; then a throughput run: eight sessions per
// gateway calling as fast as they can for a while, calls per second and the gateway's RSS
// before and after. Writes ledger.md and ledger.json.
//
//   ledger_bench --sandgate PATH [--calls N] [--seconds S] [--out DIR]
#include <unistd.h>

#include <algorithm>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>

#include "auth/token_store.hpp"
#include "bench/common/measure.hpp"
#include "tests/integration/postgres_cluster.hpp"
#include "tests/support/gateway_launch.hpp"
#include "tests/support/mcp_client.hpp"
#include "tests/support/server_process.hpp"

namespace asio = boost::asio;
namespace bench = sandgate::bench;
namespace test = sandgate::test;
using nlohmann::json;

namespace {

constexpr const char* kToken = "ledger-bench-token-0123456789abcdef";

struct Options {
  std::string sandgate;
  int calls = 2000;
  int seconds = 10;
  std::filesystem::path out = "bench/results";
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
    else if (arg == "--calls")
      o.calls = std::stoi(value());
    else if (arg == "--seconds")
      o.seconds = std::stoi(value());
    else if (arg == "--out")
      o.out = value();
    else
      throw std::invalid_argument("unknown option " + arg);
  }
  if (o.sandgate.empty()) throw std::invalid_argument("--sandgate is required");
  return o;
}

struct Variant {
  std::string name;
  std::unique_ptr<test::ServerProcess> gateway;
  std::unique_ptr<test::McpClient> client;
  std::string session;
  std::vector<double> ms;
  double calls_per_second = 0;
  long rss_before_kib = 0, rss_after_kib = 0;
  int errors = 0;
};

asio::awaitable<void> interleave(std::vector<Variant*> variants, int calls) {
  for (auto* v : variants) {
    v->session = co_await v->client->initialize();
    for (int i = 0; i < 20; ++i) co_await v->client->execute(v->session, "bash", "true");
  }
  for (int i = 0; i < calls; ++i)
    for (std::size_t turn = 0; turn < variants.size(); ++turn) {
      Variant* v = variants[(static_cast<std::size_t>(i) + turn) % variants.size()];
      auto start = bench::Clock::now();
      try {
        co_await v->client->execute(v->session, "bash", "true");
        v->ms.push_back(bench::ms_since(start));
      } catch (const std::exception&) {
        ++v->errors;
      }
    }
}

// One of eight callers: warm calls in its own session until `until`.
asio::awaitable<void> hammer(test::McpClient& client, bench::Clock::time_point until, long& calls,
                             int& errors) {
  std::string session = co_await client.initialize();
  while (bench::Clock::now() < until) {
    try {
      co_await client.execute(session, "bash", "true");
      ++calls;
    } catch (const std::exception&) {
      ++errors;
    }
  }
  co_await client.end(session);
}

void throughput(Variant& v, int seconds) {
  asio::io_context io;
  std::vector<std::unique_ptr<test::McpClient>> clients;
  long calls = 0;
  v.rss_before_kib = bench::proc_status_kib(v.gateway->pid(), "VmRSS");
  auto until = bench::Clock::now() + std::chrono::seconds(seconds);
  std::vector<std::future<void>> done;
  for (int i = 0; i < 8; ++i) {
    clients.push_back(
        std::make_unique<test::McpClient>(io.get_executor(), v.gateway->endpoint(), kToken));
    done.push_back(
        asio::co_spawn(io, hammer(*clients.back(), until, calls, v.errors), asio::use_future));
  }
  auto start = bench::Clock::now();
  io.run();
  for (auto& d : done) d.get();
  v.calls_per_second = static_cast<double>(calls) / (bench::ms_since(start) / 1000);
  v.rss_after_kib = bench::proc_status_kib(v.gateway->pid(), "VmRSS");
}

}  // namespace

int main(int argc, char** argv) try {
  Options o = parse(argc, argv);
  std::filesystem::create_directories(o.out);
  auto dir = std::filesystem::temp_directory_path() /
             ("sandgate-ledger-bench-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  struct RemoveDir {
    std::filesystem::path dir;
    ~RemoveDir() { std::filesystem::remove_all(dir); }
  } remove_dir{dir};
  // The tenant's budget is far away: every call asks it, none is refused.
  std::ofstream(dir / "tokens") << sandgate::auth::to_hex(sandgate::auth::sha256(kToken))
                                << " bench budget_usd_per_day=100000\n";
  std::filesystem::permissions(
      dir / "tokens", std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  std::unique_ptr<test::PostgresCluster> pg;
  if (!test::PostgresCluster::missing()) pg = std::make_unique<test::PostgresCluster>();

  asio::io_context io;  // before the clients made on it, which go first
  std::vector<std::unique_ptr<Variant>> variants;
  auto start_variant = [&](const std::string& name, std::vector<std::string> args) {
    auto v = std::make_unique<Variant>();
    v->name = name;
    args.insert(args.end(), {"--max-concurrent-calls", "16", "--max-sandboxes", "16"});
    v->gateway =
        std::make_unique<test::ServerProcess>("sandgate", test::sandgate_command(o.sandgate, args),
                                              std::vector<std::string>{"PATH=/usr/bin:/bin"},
                                              test::LaunchOptions{.ready_path = "/readyz"});
    variants.push_back(std::move(v));
  };
  // The ledger off and no budget: the tokens file without one.
  std::ofstream(dir / "tokens-off")
      << sandgate::auth::to_hex(sandgate::auth::sha256(kToken)) << " bench\n";
  std::filesystem::permissions(
      dir / "tokens-off", std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  start_variant("off", {"--token-file", (dir / "tokens-off").string(), "--ledger", "off"});
  start_variant("sqlite", {"--token-file", (dir / "tokens").string(), "--state-dir",
                           (dir / "state").string()});
  if (pg)
    start_variant("postgresql", {"--token-file", (dir / "tokens").string(), "--state-dir",
                                 (dir / "state-pg").string(), "--ledger", pg->url(),
                                 "--ledger-password-file", pg->password_file()});

  std::vector<Variant*> order;
  for (auto& v : variants) {
    v->client =
        std::make_unique<test::McpClient>(io.get_executor(), v->gateway->endpoint(), kToken);
    order.push_back(v.get());
  }
  auto done = asio::co_spawn(io, interleave(order, o.calls), asio::use_future);
  io.run();
  done.get();

  for (auto& v : variants) throughput(*v, o.seconds);

  const double off50 = bench::stats(variants[0]->ms).p50;
  json out = {{"machine", bench::machine()}, {"calls_each", o.calls}, {"seconds", o.seconds}};
  std::string md = "## The usage ledger and budgets on a warm call (`bench/ledger_bench`)\n\n" +
                   bench::machine() + "; " + std::to_string(o.calls) +
                   " warm bash `true` calls each, interleaved, one gateway per row; then eight "
                   "sessions per gateway calling for " +
                   std::to_string(o.seconds) +
                   " s. The tenant has a daily budget on the ledger rows (every call asks it).\n\n"
                   "| ledger | p50 ms | p90 ms | p50 / off | calls/s (8 sessions) | RSS before → "
                   "after, MiB |\n|---|---|---|---|---|---|\n";
  int errors = 0;
  for (const auto& v : variants) {
    const bench::Stats st = bench::stats(v->ms);
    const double p50 = st.p50, p90 = st.p90;
    errors += v->errors;
    out[v->name] = {{"p50_ms", p50},
                    {"p90_ms", p90},
                    {"p50_over_off", p50 / off50},
                    {"calls_per_second", v->calls_per_second},
                    {"rss_before_kib", v->rss_before_kib},
                    {"rss_after_kib", v->rss_after_kib},
                    {"errors", v->errors}};
    char row[256];
    std::snprintf(row, sizeof row, "| %s | %.3f | %.3f | %.3f | %.0f | %.1f → %.1f |\n",
                  v->name.c_str(), p50, p90, p50 / off50, v->calls_per_second,
                  static_cast<double>(v->rss_before_kib) / 1024,
                  static_cast<double>(v->rss_after_kib) / 1024);
    md += row;
  }
  std::ofstream(o.out / "ledger.json", std::ios::trunc) << out.dump(2) << "\n";
  std::ofstream(o.out / "ledger.md", std::ios::trunc) << md;
  std::cout << md;
  return errors == 0 ? 0 : 1;
} catch (const std::exception& e) {
  std::cerr << "ledger_bench: " << e.what() << "\n";
  return 1;
}
