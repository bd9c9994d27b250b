// The soak: many concurrent clients play a random mix of calls, timeouts, cancellations,
// DELETEs mid-call, abandoned sessions and bad requests against a real gateway for a set time.
// Hostile raw-socket clients (tests/soak/hostile_actor.hpp) run beside them.
// Then it waits for the idle sweep, stops the gateway and checks that every well-formed call got
// the right answer, that nothing is left (processes, cgroups, host mounts, files; while it runs,
// nothing but the pool's ready sandboxes, which it keeps on as by default) and that the
// gateway's memory came back to its baseline.
//
//   soak_driver --sandgate PATH [--seconds N] [--clients N] [--hostile N] [--seed N]
//               [--abandoning N] [--max-sandboxes N] [--max-sessions-per-tenant N]
//               [--report FILE]
//
// --abandoning adds clients that open a session per short task and mostly leave it without
// DELETE (as most real clients do); with the caps set well below the sessions they open, the
// gateway must make room (hibernate idle sandboxes, end idle sessions) and never refuse a call
// for a cap, and live sandboxes must stay within --max-sandboxes.
//
// Exit status 0 only when every check passed; the report (JSON) says what was done and found.
#include <signal.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>
#include <thread>

#include "bench/common/measure.hpp"
#include "tests/soak/hostile_actor.hpp"
#include "tests/soak/scenarios.hpp"
#include "tests/support/host_probe.hpp"
#include "tests/support/http_client.hpp"
#include "tests/support/server_process.hpp"

namespace asio = boost::asio;
namespace fs = std::filesystem;
using nlohmann::json;
using sandgate::test::ServerProcess;

namespace {

#ifdef SANDGATE_SANITIZED
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif
// Abandoned sessions must end by the idle sweep within the run, while a live client's pause
// between two of its requests (its share of one driver thread) must never reach the timeout.
// Sanitizer builds run several times slower, so they get more room.
constexpr int kIdleTimeoutSeconds = kSanitized ? 30 : 10;
// RSS the gateway may keep above its warmed-up baseline once every session has ended: the
// allocator keeps some freed memory, and the per-tenant and metrics maps keep their buckets.
constexpr long kRssToleranceKib = 16 * 1024;
// Built with a sanitizer, the gateway's RSS also holds the sanitizer's quarantine or shadow
// memory, which grows with traffic by design: memory is reported, not held to the baseline.
constexpr bool kCheckMemory = !kSanitized;
// The gateway's body limit in the soak: the hostile clients announce bodies of this size.
constexpr std::uint64_t kBodyLimitBytes = 4 << 20;

struct Options {
  std::string sandgate;
  int seconds = 60;
  int clients = 16;
  int hostile = 2;
  unsigned seed = 1;
  int abandoning = 0;
  int max_sandboxes = 0;  // 0: the gateway's default
  int max_sessions_per_tenant = 1000;
  std::string report;
};

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (i + 1 >= argc) throw std::invalid_argument(arg + " needs a value");
    std::string value = argv[++i];
    if (arg == "--sandgate")
      o.sandgate = value;
    else if (arg == "--seconds")
      o.seconds = std::stoi(value);
    else if (arg == "--clients")
      o.clients = std::stoi(value);
    else if (arg == "--hostile")
      o.hostile = std::stoi(value);
    else if (arg == "--seed")
      o.seed = static_cast<unsigned>(std::stoul(value));
    else if (arg == "--abandoning")
      o.abandoning = std::stoi(value);
    else if (arg == "--max-sandboxes")
      o.max_sandboxes = std::stoi(value);
    else if (arg == "--max-sessions-per-tenant")
      o.max_sessions_per_tenant = std::stoi(value);
    else if (arg == "--report")
      o.report = value;
    else
      throw std::invalid_argument("unknown option " + arg);
  }
  if (o.sandgate.empty()) throw std::invalid_argument("--sandgate PATH is required");
  return o;
}

// Entries under the places a sandbox runtime could leave files on the host.
std::set<std::string> host_scratch_entries() {
  std::set<std::string> out;
  for (const char* dir : {"/tmp", "/run", "/dev/shm", "/var/tmp"}) {
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(dir, ec))
      if (e.path().filename().string().find("sandgate") != std::string::npos)
        out.insert(e.path().string());
  }
  return out;
}

long metric(ServerProcess& gateway, const std::string& name) {
  auto [status, body] = sandgate::test::http_get(gateway.endpoint(), "/metrics");
  auto at = body.find("\n" + name + " ");
  if (status != 200 || at == std::string::npos) return -1;
  return std::stol(body.substr(at + name.size() + 2));
}

void run_actors(asio::io_context& io, ServerProcess& gateway, const std::string& token,
                const Options& options, unsigned seed, std::chrono::seconds duration,
                sandgate::soak::Tally& tally) {
  std::vector<std::unique_ptr<sandgate::soak::Actor>> actors;
  for (int i = 0; i < options.clients; ++i)
    actors.push_back(std::make_unique<sandgate::soak::Actor>(io.get_executor(), gateway.endpoint(),
                                                             token, seed * 1000 + i, tally));
  for (int i = 0; i < options.abandoning; ++i)
    actors.push_back(std::make_unique<sandgate::soak::Actor>(
        io.get_executor(), gateway.endpoint(), token, seed * 1000 + 300 + i, tally,
        sandgate::soak::Behaviour::abandoning));
  std::vector<std::unique_ptr<sandgate::soak::HostileActor>> hostile;
  for (int i = 0; i < options.hostile; ++i)
    hostile.push_back(std::make_unique<sandgate::soak::HostileActor>(
        io.get_executor(), gateway.endpoint(), token, kBodyLimitBytes, seed * 1000 + 500 + i,
        tally));
  auto deadline = std::chrono::steady_clock::now() + duration;
  int running = static_cast<int>(actors.size() + hostile.size());
  auto on_end = [&](std::exception_ptr failure) {
    --running;
    if (failure) tally.transport("actor", "ended by an exception");
  };
  for (auto& actor : actors) asio::co_spawn(io, actor->run(deadline), on_end);
  for (auto& actor : hostile) asio::co_spawn(io, actor->run(deadline), on_end);
  io.restart();
  while (running > 0) io.run_one();
}

}  // namespace

int main(int argc, char** argv) {
  signal(SIGPIPE, SIG_IGN);
  Options options;
  try {
    options = parse(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "soak_driver: " << e.what() << "\n";
    return 2;
  }
  const std::string token = "soak-token-" + std::to_string(options.seed);
  auto mounts_before = sandgate::test::mount_count();
  auto scratch_before = host_scratch_entries();
  std::vector<std::string> args = {options.sandgate,
                                   "--listen",
                                   "127.0.0.1:0",
                                   "--log-level",
                                   "warn",
                                   "--session-idle-timeout",
                                   std::to_string(kIdleTimeoutSeconds),
                                   "--max-sessions-per-tenant",
                                   std::to_string(options.max_sessions_per_tenant),
                                   "--max-processes",
                                   "64",
                                   "--body-limit-bytes",
                                   std::to_string(kBodyLimitBytes)};
  if (options.max_sandboxes > 0) {
    args.push_back("--max-sandboxes");
    args.push_back(std::to_string(options.max_sandboxes));
  }
  ServerProcess gateway("sandgate", args, {"SANDGATE_TOKEN=" + token, "PATH=/usr/bin:/bin"},
                        {.ready_path = "/readyz",
                         .ready_limit = std::chrono::seconds(10),
                         .stop_grace = std::chrono::seconds(30)});
  asio::io_context io;
  sandgate::soak::Tally tally;
  json report = {{"seconds", options.seconds},
                 {"clients", options.clients},
                 {"abandoning_clients", options.abandoning},
                 {"max_sandboxes", options.max_sandboxes},
                 {"max_sessions_per_tenant", options.max_sessions_per_tenant},
                 {"hostile_clients", options.hostile},
                 {"seed", options.seed},
                 {"machine", sandgate::bench::machine()}};

  // The pool of ready sandboxes (on, as by default) fills before anything runs: what one ready
  // sandbox holds (its cgroups, its supervisor) is measured here, so that the end can tell the
  // pool's sandboxes from anything left over.
  const long pool_size = metric(gateway, "sandgate_pool_size");
  for (int i = 0; i < 120 && metric(gateway, "sandgate_pool_ready") < pool_size; ++i)
    std::this_thread::sleep_for(std::chrono::seconds(1));
  const long pool_at_start = metric(gateway, "sandgate_pool_ready");
  const int cgroups_at_start = sandgate::test::sandbox_cgroups_of(gateway.pid());
  const bool pool_measured =
      pool_at_start == pool_size &&
      static_cast<long>(sandgate::test::children_of(gateway.pid()).size()) == pool_size &&
      (pool_size == 0 ? cgroups_at_start == 0 : cgroups_at_start % pool_size == 0);
  const int cgroups_per_ready = pool_size > 0 ? cgroups_at_start / static_cast<int>(pool_size) : 0;

  // Warm-up: the same mix for a few seconds, so the baseline includes what the gateway keeps
  // for good (thread stacks, allocator arenas, metric and tenant maps).
  run_actors(io, gateway, token, options, options.seed + 7777, std::chrono::seconds(5), tally);
  // (The sweep runs every half idle timeout, so an abandoned session is gone within 1.5 of it.)
  if (kCheckMemory)
    std::this_thread::sleep_for(std::chrono::seconds(kIdleTimeoutSeconds * 3 / 2 + 2));
  long baseline_kib = gateway.rss_kib();
  sandgate::soak::Tally warmup = tally;
  tally = {};

  long peak_kib = baseline_kib;
  // Live sandboxes, sessions' and the pool's ready ones together, as /metrics says (the one
  // the pool is building shows in neither; the slots bound it).
  long peak_sandboxes = 0;
  // Every process the gateway started (supervisors and what runs in sandboxes), as sampled
  // during the run: none may outlive the gateway.
  std::set<sandgate::test::ProcessIdentity> started_processes;
  std::atomic<bool> sampling{true};
  std::string sampler_failed;
  // An exception escaping this thread would end the driver without stopping the gateway, and
  // ctest would then wait for the gateway's inherited output until its timeout.
  std::thread sampler([&] {
    try {
      while (sampling) {
        peak_kib = std::max(peak_kib, gateway.rss_kib());
        peak_sandboxes = std::max(peak_sandboxes, metric(gateway, "sandgate_sandboxes") +
                                                      metric(gateway, "sandgate_pool_ready"));
        for (const auto& process : sandgate::test::descendants_of(gateway.pid()))
          started_processes.insert(process);
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
      }
    } catch (const std::exception& e) {
      sampler_failed = e.what();
    }
  });
  auto started = sandgate::bench::Clock::now();
  run_actors(io, gateway, token, options, options.seed, std::chrono::seconds(options.seconds),
             tally);
  double ran_s = sandgate::bench::ms_since(started) / 1000;
  sampling = false;
  sampler.join();

  // How the gateway made room while the caps were full.
  json made_room;
  for (const char* name : {"sandgate_hibernations_total{reason=\"sandbox_cap\"}",
                           "sandgate_hibernations_total{reason=\"memory_budget\"}",
                           "sandgate_sandboxes_evicted_total{reason=\"sandbox_cap\"}",
                           "sandgate_sessions_evicted_total{reason=\"tenant_cap\"}",
                           "sandgate_resumes_total", "sandgate_sessions_created_total"})
    made_room[name] = metric(gateway, name);

  // Abandoned sessions end by the idle sweep; wait for it, then everything must be gone.
  long sessions = -1, sandboxes = -1;
  for (int i = 0; i < 4 * kIdleTimeoutSeconds; ++i) {
    sessions = metric(gateway, "sandgate_sessions");
    sandboxes = metric(gateway, "sandgate_sandboxes");
    if (sessions == 0 && sandboxes == 0) break;
    std::this_thread::sleep_for(std::chrono::seconds(1));
  }
  // What stays is the pool's ready sandboxes: once it is full again, the gateway's only
  // sandboxes are those, each with a supervisor and exactly the cgroups one had at the start.
  long pool_ready = -1;
  for (int i = 0; i < 120; ++i) {
    pool_ready = metric(gateway, "sandgate_pool_ready");
    if (pool_ready == pool_size) break;
    std::this_thread::sleep_for(std::chrono::seconds(1));
  }
  std::this_thread::sleep_for(std::chrono::seconds(1));
  long final_kib = gateway.rss_kib();
  auto supervisors_left = sandgate::test::children_of(gateway.pid());
  int cgroups_while_idle = sandgate::test::sandbox_cgroups_of(gateway.pid());
  const bool only_the_pool_left =
      pool_measured && pool_ready >= 0 &&
      static_cast<long>(supervisors_left.size()) == pool_ready &&
      cgroups_while_idle == cgroups_per_ready * static_cast<int>(pool_ready);
  pid_t pid = gateway.pid();
  int exit_status = gateway.stop_or_kill();
  int cgroups_after_exit = sandgate::test::cgroups_of(pid);
  int processes_after_exit = 0;
  for (const auto& process : started_processes)
    processes_after_exit += sandgate::test::still_alive(process) ? 1 : 0;
  auto scratch_after = host_scratch_entries();
  std::vector<std::string> new_scratch;
  for (const auto& e : scratch_after)
    if (!scratch_before.count(e)) new_scratch.push_back(e);
  long mounts_delta = long(sandgate::test::mount_count()) - long(mounts_before);

  long operations = 0;
  for (auto& [_, n] : tally.done) operations += n;
  report["operations"] = operations;
  report["operations_per_second"] = operations / ran_s;
  report["by_scenario"] = tally.done;
  report["wrong_answers"] = tally.wrong_answers;
  report["transport_errors"] = tally.transport_errors;
  report["cap_refusals"] = tally.cap_refusals + warmup.cap_refusals;
  report["sessions_abandoned"] = tally.abandoned;
  report["peak_live_sandboxes"] = peak_sandboxes;
  report["made_room"] = made_room;
  report["warmup_wrong_answers"] = warmup.wrong_answers + warmup.transport_errors;
  report["problems"] = tally.first_problems;
  if (!sampler_failed.empty()) report["problems"].push_back("sampling failed: " + sampler_failed);
  for (const auto& problem : warmup.first_problems) report["problems"].push_back(problem);
  report["rss_kib"] = {{"baseline", baseline_kib},
                       {"peak", peak_kib},
                       {"final", final_kib},
                       {"checked", kCheckMemory}};
  report["after_idle_sweep"] = {{"sessions", sessions},
                                {"sandboxes", sandboxes},
                                {"pool_size", pool_size},
                                {"pool_ready", pool_ready},
                                {"pool_at_start", pool_at_start},
                                {"cgroups_per_ready_sandbox", cgroups_per_ready},
                                {"supervisor_processes", supervisors_left.size()},
                                {"cgroups", cgroups_while_idle}};
  report["after_exit"] = {{"exit_status", exit_status},
                          {"cgroups", cgroups_after_exit},
                          {"processes_seen_during_run", started_processes.size()},
                          {"processes", processes_after_exit},
                          {"host_mounts_delta", mounts_delta},
                          {"new_host_files", new_scratch}};
  const bool within_sandbox_cap =
      options.max_sandboxes == 0 || peak_sandboxes <= options.max_sandboxes;
  bool ok = tally.wrong_answers == 0 && tally.transport_errors == 0 && warmup.wrong_answers == 0 &&
            warmup.transport_errors == 0 && tally.cap_refusals == 0 && warmup.cap_refusals == 0 &&
            within_sandbox_cap && sessions == 0 && sandboxes == 0 && only_the_pool_left &&
            exit_status == 0 && cgroups_after_exit == 0 && sampler_failed.empty() &&
            !started_processes.empty() && processes_after_exit == 0 && mounts_delta == 0 &&
            new_scratch.empty() && (!kCheckMemory || final_kib <= baseline_kib + kRssToleranceKib);
  report["passed"] = ok;
  std::cout << report.dump(2) << "\n";
  if (!options.report.empty()) std::ofstream(options.report) << report.dump(2) << "\n";
  return ok ? 0 : 1;
}
