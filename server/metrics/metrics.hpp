#pragma once
// Prometheus counters and a duration histogram, lock-free to update, rendered as text.
#include <array>
#include <atomic>
#include <cstdint>
#include <iosfwd>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "common/pool_stats.hpp"

namespace sandgate::server {

enum class ExecOutcome {
  ok,
  nonzero_exit,
  timeout,
  cancelled,
  sandbox_failure,
  invalid_arguments,
  busy,
  budget_spent,  // refused, or ended, by the tenant's daily or monthly budget
  count_
};

const char* exec_outcome_name(ExecOutcome outcome);

struct Gauges {
  std::size_t sessions;
  std::size_t sandboxes;
  std::size_t connections;
  double live_spend_usd;
  bool ready;
  std::size_t calls_waiting = 0;  // execute calls waiting for a gateway slot
  std::size_t handles = 0;        // of `sessions`, those named as sandbox handles
  // Hibernation (all 0 when it is off).
  std::size_t hibernated = 0;      // sessions whose sandbox is hibernated
  std::uint64_t state_bytes = 0;   // their archives' bytes
  std::uint64_t hibernations = 0;  // counters since start; by the idle sweep (pressure's: Metrics)
  std::uint64_t resumes = 0;
  std::uint64_t archives_dropped = 0;
  std::uint64_t idle_sweeps = 0;  // passes of the idle sweep (expiry, hibernation) since start
  PoolStats pool{};  // the pool of ready sandboxes, as the pool counts it (all 0 when it is off)
  // Each ready environment's own pool (issue #43), by the environment's name (the operator's
  // names: a-z, 0-9, '-', '_').
  std::vector<std::pair<std::string, PoolStats>> environment_pools{};
  // The gateway process's own resident memory, and what the sandboxes' budget leaves it
  // (--gateway-memory-reserve-mb): the first nearing the second is the gateway's OOM risk.
  std::uint64_t gateway_resident_bytes = 0;
  std::uint64_t gateway_memory_reserve_bytes = 0;
};

class Metrics {
 public:
  void count_execution(ExecOutcome outcome, double seconds);
  void count_auth_failure() { auth_failures_++; }
  // A request's credential by kind (static, jwt) and outcome (ok, expired, audience, signature
  // …). Both are words from the code, never from a request: the label set stays small.
  void count_auth(const char* kind, const char* outcome);
  void count_jwks_refresh(bool ok) { (ok ? jwks_refreshed_ : jwks_refresh_failed_)++; }
  // A save of the usage ledger (a batch of stretches), by outcome.
  void count_ledger_save(bool ok) { (ok ? ledger_saved_ : ledger_save_failed_)++; }
  // What a tenant's sandboxes spent, as the ledger saved it. `label`: the tenant's name for
  // tenants the operator named (a tokens-file or OAuth policy line), else "other"; at most
  // kMaxSpendLabels labels, later ones counted as "other".
  static constexpr std::size_t kMaxSpendLabels = 1000;
  void count_tenant_spend(const std::string& label, double usd);
  void count_session_created() { sessions_created_++; }
  // An environment's build ended: its layer is ready, or it failed.
  void count_environment_build(bool ready) { (ready ? env_builds_ready_ : env_builds_failed_)++; }
  void count_session_refused() { sessions_refused_++; }
  // A session or handle (tenant_cap, gateway_cap) or a sandbox (sandbox_cap, memory_budget,
  // tenant_share) ended for room.
  void count_eviction(const char* reason);
  // A sandbox hibernated to make room for a new one (sandbox_cap, memory_budget, tenant_share).
  void count_pressure_hibernation(const char* reason);
  void count_http(unsigned status);
  // A request relayed to the replica that holds its session, handle or task (`ok`), or not,
  // because that replica could not be reached (`unreachable`).
  void count_forward(bool ok) { (ok ? forwards_ok_ : forwards_unreachable_)++; }
  // A connection through a sandbox's egress proxy ended: `outcome` is relayed, refused, capped
  // or failed (egress::connection_end_name), with the bytes it carried each way.
  void count_egress(const char* outcome, std::uint64_t bytes_up, std::uint64_t bytes_down);
  // One upstream tool call from a sandbox (issue #45): its upstream (a name from the operator's
  // file), outcome (a word of upstream/tool_channel.hpp), duration and answer's bytes.
  void count_tool_call(const std::string& upstream, const std::string& outcome, double seconds,
                       std::uint64_t bytes);
  std::string render(const Gauges& gauges) const;

 private:
  // render()'s parts, in the order they are written (metrics.cpp).
  void render_sandboxes(std::ostream& out, const Gauges& g) const;
  void render_sessions_and_auth(std::ostream& out) const;
  void render_ledger_and_egress(std::ostream& out) const;
  void render_tool_calls(std::ostream& out) const;
  void render_http_and_executions(std::ostream& out) const;
  static constexpr std::array<double, 10> kBuckets = {0.005, 0.01, 0.025, 0.05, 0.1,
                                                      0.25,  1,    5,     30,   300};
  std::array<std::atomic<std::uint64_t>, static_cast<std::size_t>(ExecOutcome::count_)>
      executions_{};
  std::array<std::atomic<std::uint64_t>, kBuckets.size() + 1> duration_buckets_{};
  std::atomic<std::uint64_t> duration_micros_{0};
  std::atomic<std::uint64_t> auth_failures_{0};
  std::atomic<std::uint64_t> sessions_created_{0};
  std::atomic<std::uint64_t> env_builds_ready_{0}, env_builds_failed_{0};
  std::atomic<std::uint64_t> sessions_refused_{0};
  std::atomic<std::uint64_t> evicted_tenant_cap_{0}, evicted_gateway_cap_{0},
      evicted_sandbox_cap_{0}, evicted_memory_budget_{0}, evicted_tenant_share_{0};
  std::atomic<std::uint64_t> hibernated_sandbox_cap_{0}, hibernated_memory_budget_{0},
      hibernated_tenant_share_{0};
  std::atomic<std::uint64_t> http_2xx_{0}, http_4xx_{0}, http_5xx_{0};
  std::atomic<std::uint64_t> jwks_refreshed_{0}, jwks_refresh_failed_{0};
  std::atomic<std::uint64_t> ledger_saved_{0}, ledger_save_failed_{0};
  std::atomic<std::uint64_t> forwards_ok_{0}, forwards_unreachable_{0};
  std::atomic<std::uint64_t> egress_relayed_{0}, egress_refused_{0}, egress_capped_{0},
      egress_failed_{0}, egress_bytes_up_{0}, egress_bytes_down_{0};
  mutable std::mutex auth_mutex_;
  std::map<std::pair<std::string, std::string>, std::uint64_t> auth_outcomes_;
  mutable std::mutex spend_mutex_;
  struct ToolCalls {
    std::map<std::string, std::uint64_t> by_outcome;
    double seconds = 0;
    std::uint64_t bytes = 0;
  };
  mutable std::mutex tool_calls_mutex_;
  std::map<std::string, ToolCalls> tool_calls_;  // by upstream
  std::map<std::string, double> tenant_spend_;
};

}  // namespace sandgate::server
