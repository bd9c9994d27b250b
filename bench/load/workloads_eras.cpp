// Workload 6: the two protocol eras side by side on sandgate alone (the peer speaks only
// 2025-11-25): warm `bash true` calls through a 2025 session and through a 2026-07-28 sandbox
// handle, interleaved on two connections. The handle path parses the _meta envelope and the
// mirrored headers and looks the handle up on every call; this measures what that costs.
#include "bench/common/measure.hpp"
#include "bench/load/driver.hpp"
#include "bench/load/workloads.hpp"

namespace sandgate::bench {

namespace {

asio::awaitable<void> interleaved(McpClient& sessions, McpClient& stateless,
                                  const std::string& session, const std::string& handle, int calls,
                                  RunResult& by_session, RunResult& by_handle) {
  for (int i = 0; i < 5; ++i) {  // warm-up of both paths
    co_await sessions.execute(session, "bash", "true");
    co_await stateless.execute_stateless(handle, "bash", "true");
  }
  for (int i = 0; i < calls; ++i)
    // Alternate who goes first, so neither path always runs right after the other.
    for (int turn = 0; turn < 2; ++turn) {
      bool via_session = (i + turn) % 2 == 0;
      RunResult& out = via_session ? by_session : by_handle;
      auto start = Clock::now();
      try {
        if (via_session)
          co_await sessions.execute(session, "bash", "true");
        else
          co_await stateless.execute_stateless(handle, "bash", "true");
        out.latencies_ms.push_back(ms_since(start));
      } catch (const std::exception& e) {
        if (out.errors++ == 0) out.first_error = e.what();
      }
    }
}

json era_json(const RunResult& run) {
  auto s = stats(run.latencies_ms);
  return {{"p50_ms", s.p50},
          {"p99_ms", s.p99},
          {"count", s.count},
          {"errors", run.errors},
          {"first_error", run.first_error}};
}

}  // namespace

Section protocol_eras(BenchContext& c) {
  McpClient sessions(c.io.get_executor(), c.sandgate.endpoint(), c.token);
  McpClient stateless(c.io.get_executor(), c.sandgate.endpoint(), c.token);
  auto session = await(c.io, sessions.initialize());
  auto made = await(c.io, stateless.execute_stateless({}, "bash", "true"));
  std::string handle = made["structuredContent"]["sandbox_id"];
  RunResult by_session, by_handle;
  await(c.io, interleaved(sessions, stateless, session, handle, c.settings.warm_calls, by_session,
                          by_handle));
  await(c.io, sessions.end(session));
  auto s = stats(by_session.latencies_ms), h = stats(by_handle.latencies_ms);
  Section section;
  section.data = {{"name", "protocol_eras"},
                  {"calls", c.settings.warm_calls},
                  {"session_2025", era_json(by_session)},
                  {"handle_2026", era_json(by_handle)},
                  {"ratio_handle_session_p50", h.p50 / s.p50}};
  section.markdown =
      "### 6. Protocol eras (sandgate only; " + std::to_string(c.settings.warm_calls) +
      " warm `bash true` calls each, interleaved)\n\n"
      "| path | p50 | p99 | errors |\n|---|---|---|---|\n"
      "| 2025-11-25 session (`Mcp-Session-Id`) | " +
      fixed(s.p50) + " | " + fixed(s.p99) + " | " + std::to_string(by_session.errors) +
      " |\n| 2026-07-28 sandbox handle (`sandbox_id`) | " + fixed(h.p50) + " | " + fixed(h.p99) +
      " | " + std::to_string(by_handle.errors) +
      " |\n\nHandle/session p50: " + fixed(h.p50 / s.p50) + ". Times in ms, round trip.\n";
  return section;
}

}  // namespace sandgate::bench
