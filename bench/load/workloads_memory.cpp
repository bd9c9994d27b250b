// Workloads 4-5: memory per idle session and per live sandbox; the output flood.
#include <thread>

#include "bench/common/measure.hpp"
#include "bench/load/driver.hpp"
#include "bench/load/workloads.hpp"

namespace sandgate::bench {

namespace {

constexpr int kOpenConcurrency = 32;

void settle() {
  std::this_thread::sleep_for(std::chrono::seconds(2));
}

struct IdleMeasure {
  double initialize_per_second = 0, initialize_p50_ms = 0;
  double rss_per_idle_session_kib = 0;
  double rss_per_live_session_kib = 0, host_per_live_session_kib = 0;
  int errors = 0;
  std::string first_error;
};

IdleMeasure measure_idle(BenchContext& c, ServerProcess& target) {
  IdleMeasure m;
  auto note = [&m](const RunResult& run) {
    if (m.errors == 0 && run.errors) m.first_error = run.first_error;
    m.errors += run.errors;
  };
  const int idle = c.settings.idle_sessions, live = c.settings.live_sandboxes;
  std::vector<std::string> ids(std::max(idle, live));
  const Operation end = [&ids](McpClient& client, int i) -> asio::awaitable<void> {
    co_await client.end(ids[i]);
  };

  settle();
  long rss_before = target.rss_kib();
  auto opened = run_concurrently(c.io, target.endpoint(), c.token, kOpenConcurrency, idle,
                                 [&ids](McpClient& client, int i) -> asio::awaitable<void> {
                                   ids[i] = co_await client.initialize();
                                 });
  note(opened);
  settle();
  m.initialize_per_second = opened.per_second();
  m.initialize_p50_ms = stats(opened.latencies_ms).p50;
  m.rss_per_idle_session_kib = double(target.rss_kib() - rss_before) / idle;
  note(run_concurrently(c.io, target.endpoint(), c.token, kOpenConcurrency, idle, end));

  settle();
  rss_before = target.rss_kib();
  long host_before = host_used_kib();
  note(run_concurrently(c.io, target.endpoint(), c.token, kOpenConcurrency, live,
                        [&ids](McpClient& client, int i) -> asio::awaitable<void> {
                          ids[i] = co_await client.initialize();
                          co_await client.execute(ids[i], "bash", "true");
                        }));
  settle();
  m.rss_per_live_session_kib = double(target.rss_kib() - rss_before) / live;
  m.host_per_live_session_kib = double(host_used_kib() - host_before) / live;
  note(run_concurrently(c.io, target.endpoint(), c.token, kOpenConcurrency, live, end));
  return m;
}

json idle_json(const IdleMeasure& m) {
  return {{"initialize_per_second", m.initialize_per_second},
          {"initialize_p50_ms", m.initialize_p50_ms},
          {"rss_per_idle_session_kib", m.rss_per_idle_session_kib},
          {"rss_per_live_session_kib", m.rss_per_live_session_kib},
          {"host_per_live_session_kib", m.host_per_live_session_kib},
          {"errors", m.errors},
          {"first_error", m.first_error}};
}

struct FloodMeasure {
  std::vector<double> seconds, rss_growth_kib;
  int errors = 0;
  std::string first_error;
};

void flood_once(BenchContext& c, ServerProcess& target, const std::string& code,
                bool expect_truncated, FloodMeasure& out) {
  McpClient client(c.io.get_executor(), target.endpoint(), c.token);
  try {
    auto session = await(c.io, client.initialize());
    await(c.io, client.execute(session, "bash", "true"));
    long rss_before = target.rss_kib();
    reset_peak_rss(target.pid());
    auto start = Clock::now();
    auto result = await(c.io, client.execute(session, "bash", code));
    out.seconds.push_back(ms_since(start) / 1000);
    out.rss_growth_kib.push_back(double(proc_status_kib(target.pid(), "VmHWM") - rss_before));
    if (result["structuredContent"].value("truncated", false) != expect_truncated)
      throw McpFailure("the output's truncated flag is wrong");
    await(c.io, client.end(session));
  } catch (const std::exception& e) {
    if (out.errors++ == 0) out.first_error = e.what();
  }
}

}  // namespace

Section idle_sessions(BenchContext& c) {
  auto s = measure_idle(c, c.sandgate);
  auto p = measure_idle(c, c.peer);
  Section section;
  section.data = {
      {"name", "idle_sessions"},
      {"idle_sessions", c.settings.idle_sessions},
      {"live_sandboxes", c.settings.live_sandboxes},
      {"open_concurrency", kOpenConcurrency},
      {"sandgate", idle_json(s)},
      {"peer", idle_json(p)},
      {"ratio_initialize_sandgate_peer", s.initialize_per_second / p.initialize_per_second}};
  auto row = [](const char* name, const IdleMeasure& m) {
    return "| " + std::string(name) + " | " + fixed(m.initialize_per_second, 0) + " | " +
           fixed(m.initialize_p50_ms) + " | " + fixed(m.rss_per_idle_session_kib, 1) + " | " +
           fixed(m.rss_per_live_session_kib, 1) + " | " + fixed(m.host_per_live_session_kib, 0) +
           " | " + std::to_string(m.errors) + " |\n";
  };
  section.markdown =
      "### 4. Idle sessions (" + std::to_string(c.settings.idle_sessions) +
      " sessions opened at concurrency " + std::to_string(kOpenConcurrency) + ", then " +
      std::to_string(c.settings.live_sandboxes) +
      " sessions that each ran one call and keep their sandbox)\n\n"
      "| target | initialize/s | initialize p50 ms | gateway RSS per idle session KiB | gateway "
      "RSS per live session KiB | host memory per live session KiB | errors |\n"
      "|---|---|---|---|---|---|---|\n" +
      row("sandgate", s) + row("peer", p) + "\nsandgate/peer initialize throughput: " +
      fixed(s.initialize_per_second / p.initialize_per_second) +
      ". A live sandgate session holds a sandbox (supervisor process, namespaces, cgroups, "
      "tmpfs); a live peer session holds nothing but its server object.\n";
  return section;
}

Section output_flood(BenchContext& c) {
  const std::string flood = "yes abcdefghijklmnopqrstuvwxyz0123456789 2>/dev/null | head -c " +
                            std::to_string(c.settings.flood_bytes);
  // The baseline: output of exactly the kept size (1 MiB), which both servers must hold and
  // send. What the flood costs is its growth beyond this one's.
  const std::string at_cap =
      "yes abcdefghijklmnopqrstuvwxyz0123456789 2>/dev/null | head -c 1048576";
  FloodMeasure s, p, s_cap, p_cap;
  std::vector<double> floor;
  for (int round = 0; round < c.settings.rounds; ++round) {
    flood_once(c, c.sandgate, at_cap, false, s_cap);
    flood_once(c, c.peer, at_cap, false, p_cap);
    flood_once(c, c.sandgate, flood, true, s);
    flood_once(c, c.peer, flood, true, p);
    floor.push_back(run_bare({"/usr/bin/bash", "-c", flood}) / 1000);
  }
  auto median = [](const std::vector<double>& v) { return stats(v).p50; };
  auto side = [&](const FloodMeasure& m, const FloodMeasure& cap) {
    return json{{"seconds_p50", median(m.seconds)},
                {"peak_rss_growth_kib_p50", median(m.rss_growth_kib)},
                {"peak_rss_growth_at_cap_kib_p50", median(cap.rss_growth_kib)},
                {"flood_cost_kib", median(m.rss_growth_kib) - median(cap.rss_growth_kib)},
                {"errors", m.errors + cap.errors},
                {"first_error", m.first_error.empty() ? cap.first_error : m.first_error}};
  };
  Section section;
  section.data = {{"name", "output_flood"},      {"bytes", c.settings.flood_bytes},
                  {"rounds", c.settings.rounds}, {"sandgate", side(s, s_cap)},
                  {"peer", side(p, p_cap)},      {"floor", {{"seconds_p50", median(floor)}}}};
  auto row = [&](const char* name, const FloodMeasure& m, const FloodMeasure& cap) {
    return "| " + std::string(name) + " | " + fixed(median(m.seconds)) + " | " +
           fixed(median(cap.rss_growth_kib), 0) + " | " + fixed(median(m.rss_growth_kib), 0) +
           " | " + fixed(median(m.rss_growth_kib) - median(cap.rss_growth_kib), 0) + " | " +
           std::to_string(m.errors + cap.errors) + " |\n";
  };
  section.markdown =
      "### 5. Output flood (a program writes " + std::to_string(c.settings.flood_bytes / 1000000) +
      " MB to stdout; both servers keep 1 MiB; median of " + std::to_string(c.settings.rounds) +
      ")\n\n| target | time to result s | peak RSS growth, 1 MiB output KiB | peak RSS growth, "
      "flood KiB | the flood's own cost KiB | errors |\n|---|---|---|---|---|---|\n" +
      row("sandgate", s, s_cap) + row("peer", p, p_cap) + "| floor | " + fixed(median(floor)) +
      " | – | – | – | 0 |\n\nPeak RSS growth is the server's VmHWM during the call minus its "
      "RSS before it. A 1 MiB result is held as output, as JSON and as the HTTP body (the MCP "
      "result carries it twice: structuredContent and its text form); the flood's own cost is "
      "what the other 99 MB add to that.\n";
  return section;
}

Settings Settings::quick() {
  Settings s;
  s.warm_calls = 20;
  s.churn_sessions = 40;
  s.many_sessions = 8;
  s.many_calls = 5;
  s.idle_sessions = 200;
  s.live_sandboxes = 16;
  s.flood_bytes = 10'000'000;
  s.rounds = 1;
  return s;
}

}  // namespace sandgate::bench
