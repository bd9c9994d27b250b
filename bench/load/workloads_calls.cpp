// Workloads 1-3: session churn, warm calls, many sessions at once.
#include <array>
#include <cmath>
#include <cstdio>

#include "bench/common/measure.hpp"
#include "bench/load/driver.hpp"
#include "bench/load/workloads.hpp"

namespace sandgate::bench {

namespace {

struct Program {
  const char* title;
  const char* language;
  const char* code;
  std::vector<std::string> bare;
  bool fresh = false;     // sandgate runs it in a new process rather than its interpreter
  int calls_divisor = 1;  // for programs whose floor takes long: fewer calls
};

const std::vector<std::string> kBashTrue = {"/usr/bin/bash", "-c", "true"};

json stats_json(const RunResult& run) {
  auto s = stats(run.latencies_ms);
  return {{"p50_ms", s.p50},
          {"p90_ms", s.p90},
          {"p99_ms", s.p99},
          {"count", s.count},
          {"per_second", run.per_second()},
          {"errors", run.errors},
          {"first_error", run.first_error}};
}

asio::awaitable<void> interleaved_warm_calls(McpClient& sandgate, McpClient& peer,
                                             std::string sandgate_session, std::string peer_session,
                                             const Program& program, int calls,
                                             std::array<RunResult, 3>& out) {
  for (int i = 0; i < 5; ++i) {  // page cache, JIT-free warm-up of both servers
    co_await sandgate.execute(sandgate_session, program.language, program.code, 60, program.fresh);
    co_await peer.execute(peer_session, program.language, program.code);
  }
  for (int i = 0; i < calls; ++i)
    // Rotate who goes first, so neither side always runs right after the other.
    for (int turn = 0; turn < 3; ++turn) {
      int who = (i + turn) % 3;
      auto start = Clock::now();
      if (who == 0) {
        double ms = run_bare(program.bare);
        if (ms >= 0) out[0].latencies_ms.push_back(ms);
        continue;
      }
      try {
        if (who == 1)
          co_await sandgate.execute(sandgate_session, program.language, program.code, 60,
                                    program.fresh);
        else
          co_await peer.execute(peer_session, program.language, program.code);
        out[who].latencies_ms.push_back(ms_since(start));
      } catch (const std::exception& e) {
        if (out[who].errors++ == 0) out[who].first_error = e.what();
      }
    }
}

}  // namespace

std::string fixed(double value, int decimals) {
  char text[64];
  std::snprintf(text, sizeof text, "%.*f", decimals, value);
  return text;
}

Section warm_calls(BenchContext& c) {
  const std::vector<Program> programs = {
      {"bash `true`", "bash", "true", kBashTrue},
      {"python `pass`", "python", "pass", {"/usr/bin/python3", "-c", "pass"}},
      {"python `pass`, fresh process", "python", "pass", {"/usr/bin/python3", "-c", "pass"}, true},
      {"javascript `0`", "javascript", "0", {"/usr/bin/node", "-e", "0"}},
      {"javascript `0`, fresh process", "javascript", "0", {"/usr/bin/node", "-e", "0"}, true},
      // After the warm-up's first call has imported it, pandas is there in the interpreter.
      {"python `import pandas as pd`",
       "python",
       "import pandas as pd",
       {"/usr/bin/python3", "-c", "import pandas as pd"},
       false,
       10},
  };
  Section section;
  section.data = {
      {"name", "warm_calls"}, {"calls", c.settings.warm_calls}, {"programs", json::array()}};
  section.markdown =
      "### 2. Warm calls (one session, " + std::to_string(c.settings.warm_calls) +
      " calls per program, a tenth of that for pandas; floor/sandgate/peer interleaved; "
      "sandgate runs Python and JavaScript in its persistent interpreter unless the row says "
      "fresh process)\n\n"
      "| program | floor p50 | sandgate p50 | peer p50 | sandgate overhead | peer overhead | "
      "overhead sandgate/peer | sandgate/floor | sandgate/peer | floor p99 | sandgate p99 | peer "
      "p99 | errors |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|\n";
  McpClient sandgate(c.io.get_executor(), c.sandgate.endpoint(), c.token);
  McpClient peer(c.io.get_executor(), c.peer.endpoint(), c.token);
  auto sandgate_session = await(c.io, sandgate.initialize());
  auto peer_session = await(c.io, peer.initialize());
  for (const auto& program : programs) {
    std::array<RunResult, 3> runs;  // floor, sandgate, peer
    await(c.io,
          interleaved_warm_calls(sandgate, peer, sandgate_session, peer_session, program,
                                 std::max(1, c.settings.warm_calls / program.calls_divisor), runs));
    auto f = stats(runs[0].latencies_ms), s = stats(runs[1].latencies_ms),
         p = stats(runs[2].latencies_ms);
    double s_over = s.p50 - f.p50, p_over = p.p50 - f.p50;
    section.data["programs"].push_back({{"program", program.title},
                                        {"floor", stats_json(runs[0])},
                                        {"sandgate", stats_json(runs[1])},
                                        {"peer", stats_json(runs[2])},
                                        {"sandgate_overhead_p50_ms", s_over},
                                        {"peer_overhead_p50_ms", p_over},
                                        {"overhead_ratio_sandgate_peer", s_over / p_over},
                                        {"ratio_sandgate_floor", s.p50 / f.p50},
                                        {"ratio_sandgate_peer", s.p50 / p.p50}});
    // A warm interpreter call is faster than starting the program at all: its "overhead" is
    // negative, and a ratio of overheads means nothing then.
    auto signed_ms = [](double v) { return (v < 0 ? "-" : "+") + fixed(std::abs(v)); };
    std::string overhead_ratio = s_over > 0 && p_over > 0 ? fixed(s_over / p_over) : "–";
    section.markdown += "| " + std::string(program.title) + " | " + fixed(f.p50) + " | " +
                        fixed(s.p50) + " | " + fixed(p.p50) + " | " + signed_ms(s_over) + " | " +
                        signed_ms(p_over) + " | " + overhead_ratio + " | " + fixed(s.p50 / f.p50) +
                        " | " + fixed(s.p50 / p.p50) + " | " + fixed(f.p99) + " | " + fixed(s.p99) +
                        " | " + fixed(p.p99) + " | " +
                        std::to_string(runs[1].errors + runs[2].errors) + " |\n";
  }
  await(c.io, sandgate.end(sandgate_session));
  await(c.io, peer.end(peer_session));
  section.markdown += "\nTimes in ms, round trip as the client sees it.\n";
  return section;
}

Section session_churn(BenchContext& c, int concurrency) {
  const Operation churn = [](McpClient& client, int) -> asio::awaitable<void> {
    auto session = co_await client.initialize();
    co_await client.execute(session, "bash", "true");
    co_await client.end(session);
  };
  int per_round = std::max(1, c.settings.churn_sessions / c.settings.rounds);
  RunResult sandgate, peer, floor;
  for (int round = 0; round < c.settings.rounds; ++round) {
    sandgate.merge(
        run_concurrently(c.io, c.sandgate.endpoint(), c.token, concurrency, per_round, churn));
    peer.merge(run_concurrently(c.io, c.peer.endpoint(), c.token, concurrency, per_round, churn));
    floor.merge(floor_concurrently(concurrency, per_round, kBashTrue));
  }
  Section section;
  section.data = {{"name", "session_churn"},
                  {"concurrency", concurrency},
                  {"sessions", per_round * c.settings.rounds},
                  {"sandgate", stats_json(sandgate)},
                  {"peer", stats_json(peer)},
                  {"floor", stats_json(floor)},
                  {"ratio_sandgate_peer_per_second", sandgate.per_second() / peer.per_second()},
                  {"ratio_sandgate_floor_per_second", sandgate.per_second() / floor.per_second()}};
  auto row = [](const char* name, const RunResult& run) {
    auto s = stats(run.latencies_ms);
    return "| " + std::string(name) + " | " + fixed(run.per_second(), 0) + " | " + fixed(s.p50) +
           " | " + fixed(s.p99) + " | " + std::to_string(run.errors) + " |\n";
  };
  section.markdown =
      "### 1. Session churn at concurrency " + std::to_string(concurrency) + " (" +
      std::to_string(per_round * c.settings.rounds) +
      " × initialize → execute bash `true` → DELETE; floor: bare `bash -c true`)\n\n"
      "| target | sessions/s | p50 ms | p99 ms | errors |\n|---|---|---|---|---|\n" +
      row("sandgate", sandgate) + row("peer", peer) + row("floor", floor) +
      "\nsandgate/peer sessions per second: " + fixed(sandgate.per_second() / peer.per_second()) +
      "; sandgate/floor: " + fixed(sandgate.per_second() / floor.per_second()) + ".\n";
  return section;
}

Section many_sessions(BenchContext& c) {
  const int sessions = c.settings.many_sessions, calls = c.settings.many_calls;
  auto run_target = [&](ServerProcess& target) {
    std::vector<std::string> ids(sessions);
    // Open every session and warm its sandbox, then time only the warm calls.
    run_concurrently(c.io, target.endpoint(), c.token, sessions, sessions,
                     [&ids](McpClient& client, int i) -> asio::awaitable<void> {
                       ids[i] = co_await client.initialize();
                       co_await client.execute(ids[i], "bash", "true");
                     });
    auto run = run_concurrently(c.io, target.endpoint(), c.token, sessions, sessions,
                                [&ids, calls](McpClient& client, int i) -> asio::awaitable<void> {
                                  for (int k = 0; k < calls; ++k)
                                    co_await client.execute(ids[i], "bash", "true");
                                });
    run_concurrently(
        c.io, target.endpoint(), c.token, sessions, sessions,
        [&ids](McpClient& client, int i) -> asio::awaitable<void> { co_await client.end(ids[i]); });
    return run;
  };
  double total_calls = 0;
  double sandgate_s = 0, peer_s = 0, floor_s = 0;
  int sandgate_errors = 0, peer_errors = 0;
  for (int round = 0; round < c.settings.rounds; ++round) {
    auto s = run_target(c.sandgate);
    auto p = run_target(c.peer);
    auto f = floor_concurrently(sessions, sessions * calls, kBashTrue);
    sandgate_s += s.elapsed_s, peer_s += p.elapsed_s, floor_s += f.elapsed_s;
    sandgate_errors += s.errors, peer_errors += p.errors;
    total_calls += sessions * calls;
  }
  double s_rate = total_calls / sandgate_s, p_rate = total_calls / peer_s,
         f_rate = total_calls / floor_s;
  Section section;
  section.data = {{"name", "many_sessions"},
                  {"sessions", sessions},
                  {"calls_per_session", calls},
                  {"sandgate_calls_per_second", s_rate},
                  {"peer_calls_per_second", p_rate},
                  {"floor_calls_per_second", f_rate},
                  {"sandgate_errors", sandgate_errors},
                  {"peer_errors", peer_errors},
                  {"ratio_sandgate_peer", s_rate / p_rate},
                  {"ratio_sandgate_floor", s_rate / f_rate}};
  section.markdown = "### 3. Many sessions (" + std::to_string(sessions) + " sessions × " +
                     std::to_string(calls) +
                     " warm calls of bash `true`, all at once; floor: as many bare spawns on " +
                     std::to_string(sessions) +
                     " threads)\n\n| target | calls/s | errors |\n|---|---|---|\n"
                     "| sandgate | " +
                     fixed(s_rate, 0) + " | " + std::to_string(sandgate_errors) + " |\n| peer | " +
                     fixed(p_rate, 0) + " | " + std::to_string(peer_errors) + " |\n| floor | " +
                     fixed(f_rate, 0) + " | 0 |\n\nsandgate/peer: " + fixed(s_rate / p_rate) +
                     "; sandgate/floor: " + fixed(s_rate / f_rate) + ".\n";
  return section;
}

}  // namespace sandgate::bench
