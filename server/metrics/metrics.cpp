#include "server/metrics/metrics.hpp"

#include <cstdio>
#include <ostream>
#include <sstream>
#include <string_view>

namespace sandgate::server {

namespace {
const char* outcome_label(std::size_t i) {
  static const char* names[] = {"ok",        "nonzero_exit",    "timeout",
                                "cancelled", "sandbox_failure", "invalid_arguments",
                                "busy",      "budget_spent"};
  return names[i];
}

// A label value as Prometheus's text format writes it: backslash, quote and newline escaped.
std::string prometheus_label(const std::string& value) {
  std::string out;
  for (char c : value) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

std::string usd_number(double usd) {
  char text[32];
  std::snprintf(text, sizeof text, "%.9g", usd);
  return text;
}

// The pool and the load gauges: what the gauges say of the pool, the connections, readiness,
// live spend and calls waiting.
void render_pool_and_load(std::ostream& out, const Gauges& g) {
  out << "# HELP sandgate_pool_size Ready sandboxes the pool keeps (--pool-size).\n"
      << "# TYPE sandgate_pool_size gauge\nsandgate_pool_size " << g.pool.target << "\n"
      << "# HELP sandgate_pool_ready Ready sandboxes waiting in the pool now (not in "
         "sandgate_sandboxes).\n"
      << "# TYPE sandgate_pool_ready gauge\nsandgate_pool_ready " << g.pool.ready << "\n"
      << "# HELP sandgate_pool_takes_total New sandboxes by where they came from: the pool (hit) "
         "or built on demand (miss: the pool was empty, or off for those limits).\n"
      << "# TYPE sandgate_pool_takes_total counter\n"
      << "sandgate_pool_takes_total{result=\"hit\"} " << g.pool.hits << "\n"
      << "sandgate_pool_takes_total{result=\"miss\"} " << g.pool.misses << "\n"
      << "# HELP sandgate_pool_refills_total Ready sandboxes built (ok) or not (failed).\n"
      << "# TYPE sandgate_pool_refills_total counter\n"
      << "sandgate_pool_refills_total{result=\"ok\"} " << g.pool.refills << "\n"
      << "sandgate_pool_refills_total{result=\"failed\"} " << g.pool.refill_failures << "\n"
      << "# HELP sandgate_pool_refill_seconds_total Time the pool's builds took (with the "
         "interpreters' start and the preload); divided by the builds, the refill time.\n"
      << "# TYPE sandgate_pool_refill_seconds_total counter\n"
      << "sandgate_pool_refill_seconds_total " << g.pool.refill_seconds_total << "\n"
      << "# HELP sandgate_connections Open client connections.\n# TYPE sandgate_connections gauge\n"
      << "sandgate_connections " << g.connections << "\n"
      << "# HELP sandgate_ready 1 when the sandbox self-test passed and the gateway serves.\n"
      << "# TYPE sandgate_ready gauge\nsandgate_ready " << (g.ready ? 1 : 0) << "\n"
      << "# HELP sandgate_live_spend_usd Spend of the sessions alive now, each across all its "
         "sandboxes, USD.\n"
      << "# TYPE sandgate_live_spend_usd gauge\nsandgate_live_spend_usd " << g.live_spend_usd
      << "\n"
      << "# HELP sandgate_calls_waiting execute calls waiting for a slot (gateway or tenant cap).\n"
      << "# TYPE sandgate_calls_waiting gauge\nsandgate_calls_waiting " << g.calls_waiting << "\n"
      << "# HELP sandgate_gateway_resident_bytes The gateway process's resident memory.\n"
      << "# TYPE sandgate_gateway_resident_bytes gauge\nsandgate_gateway_resident_bytes "
      << g.gateway_resident_bytes << "\n"
      << "# HELP sandgate_gateway_memory_reserve_bytes Memory kept for the gateway out of the "
         "sandboxes' budget (--gateway-memory-reserve-mb).\n"
      << "# TYPE sandgate_gateway_memory_reserve_bytes "
         "gauge\nsandgate_gateway_memory_reserve_bytes "
      << g.gateway_memory_reserve_bytes << "\n";
  if (g.environment_pools.empty()) return;
  out << "# HELP sandgate_environment_pool_ready Ready sandboxes of each environment now (its "
         "own pool, its preload imported).\n"
      << "# TYPE sandgate_environment_pool_ready gauge\n";
  for (const auto& [name, pool] : g.environment_pools)
    out << "sandgate_environment_pool_ready{environment=\"" << name << "\"} " << pool.ready << "\n";
  out << "# HELP sandgate_environment_pool_takes_total New sandboxes of each environment by where "
         "they came from: its pool (hit) or built on demand (miss).\n"
      << "# TYPE sandgate_environment_pool_takes_total counter\n";
  for (const auto& [name, pool] : g.environment_pools)
    out << "sandgate_environment_pool_takes_total{environment=\"" << name << "\",result=\"hit\"} "
        << pool.hits << "\n"
        << "sandgate_environment_pool_takes_total{environment=\"" << name << "\",result=\"miss\"} "
        << pool.misses << "\n";
}
}  // namespace

const char* exec_outcome_name(ExecOutcome outcome) {
  return outcome_label(static_cast<std::size_t>(outcome));
}

void Metrics::count_execution(ExecOutcome outcome, double seconds) {
  executions_[static_cast<std::size_t>(outcome)]++;
  std::size_t b = 0;
  while (b < kBuckets.size() && seconds > kBuckets[b]) ++b;
  duration_buckets_[b]++;
  duration_micros_ += static_cast<std::uint64_t>(seconds * 1e6);
}

void Metrics::count_auth(const char* kind, const char* outcome) {
  std::lock_guard lock(auth_mutex_);
  ++auth_outcomes_[{kind, outcome}];
}

void Metrics::count_tenant_spend(const std::string& label, double usd) {
  std::lock_guard lock(spend_mutex_);
  auto it = tenant_spend_.find(label);
  if (it == tenant_spend_.end())
    it = tenant_spend_.size() < kMaxSpendLabels ? tenant_spend_.emplace(label, 0.0).first
                                                : tenant_spend_.try_emplace("other", 0.0).first;
  it->second += usd;
}

void Metrics::count_eviction(const char* reason) {
  std::string_view r(reason);
  if (r == "tenant_cap")
    evicted_tenant_cap_++;
  else if (r == "gateway_cap")
    evicted_gateway_cap_++;
  else if (r == "sandbox_cap")
    evicted_sandbox_cap_++;
  else if (r == "memory_budget")
    evicted_memory_budget_++;
  else if (r == "tenant_share")
    evicted_tenant_share_++;
}

void Metrics::count_pressure_hibernation(const char* reason) {
  std::string_view r(reason);
  if (r == "memory_budget")
    hibernated_memory_budget_++;
  else if (r == "tenant_share")
    hibernated_tenant_share_++;
  else
    hibernated_sandbox_cap_++;
}

void Metrics::count_egress(const char* outcome, std::uint64_t bytes_up, std::uint64_t bytes_down) {
  std::string_view kind = outcome;
  (kind == "refused"  ? egress_refused_
   : kind == "capped" ? egress_capped_
   : kind == "failed" ? egress_failed_
                      : egress_relayed_)++;
  egress_bytes_up_ += bytes_up;
  egress_bytes_down_ += bytes_down;
}

void Metrics::count_tool_call(const std::string& upstream, const std::string& outcome,
                              double seconds, std::uint64_t bytes) {
  std::lock_guard lock(tool_calls_mutex_);
  // Names come from the operator's file (at most 64 at a time); reloads could add more.
  auto it = tool_calls_.find(upstream);
  if (it == tool_calls_.end())
    it = tool_calls_.size() < 256 ? tool_calls_.try_emplace(upstream).first
                                  : tool_calls_.try_emplace("other").first;
  ++it->second.by_outcome[outcome];
  it->second.seconds += seconds;
  it->second.bytes += bytes;
}

// Code mode (issue #45): sandboxes' calls of upstream tools.
void Metrics::render_tool_calls(std::ostream& out) const {
  std::lock_guard lock(tool_calls_mutex_);
  out << "# HELP sandgate_upstream_tool_calls_total Tool calls sandboxed code made of upstream "
         "MCP servers, by upstream and outcome (ok, tool_error, refused by the channel, or why "
         "the upstream failed: unreachable, timeout, cancelled, too_large, protocol).\n"
      << "# TYPE sandgate_upstream_tool_calls_total counter\n";
  for (const auto& [upstream, calls] : tool_calls_)
    for (const auto& [outcome, count] : calls.by_outcome)
      out << "sandgate_upstream_tool_calls_total{upstream=\"" << upstream << "\",outcome=\""
          << outcome << "\"} " << count << "\n";
  out << "# HELP sandgate_upstream_tool_call_seconds_total Time sandboxes' tool calls took, by "
         "upstream.\n"
      << "# TYPE sandgate_upstream_tool_call_seconds_total counter\n";
  for (const auto& [upstream, calls] : tool_calls_)
    out << "sandgate_upstream_tool_call_seconds_total{upstream=\"" << upstream << "\"} "
        << calls.seconds << "\n";
  out << "# HELP sandgate_upstream_tool_call_bytes_total Bytes of upstream answers to "
         "sandboxes' tool calls, by upstream.\n"
      << "# TYPE sandgate_upstream_tool_call_bytes_total counter\n";
  for (const auto& [upstream, calls] : tool_calls_)
    out << "sandgate_upstream_tool_call_bytes_total{upstream=\"" << upstream << "\"} "
        << calls.bytes << "\n";
}

void Metrics::count_http(unsigned status) {
  if (status >= 500)
    http_5xx_++;
  else if (status >= 400)
    http_4xx_++;
  else
    http_2xx_++;
}

// Sessions, sandboxes, hibernation and the idle sweep.
void Metrics::render_sandboxes(std::ostream& out, const Gauges& g) const {
  out << "# HELP sandgate_sessions Open MCP sessions and sandbox handles.\n"
      << "# TYPE sandgate_sessions gauge\n"
      << "sandgate_sessions " << g.sessions << "\n"
      << "# HELP sandgate_sandbox_handles Of those, sandbox handles (sandbox_id).\n"
      << "# TYPE sandgate_sandbox_handles gauge\n"
      << "sandgate_sandbox_handles " << g.handles << "\n"
      << "# HELP sandgate_sandboxes Live sandboxes.\n# TYPE sandgate_sandboxes gauge\n"
      << "sandgate_sandboxes " << g.sandboxes << "\n"
      << "# HELP sandgate_sandboxes_hibernated Sessions whose sandbox is hibernated (/work kept "
         "as an archive, no processes).\n"
      << "# TYPE sandgate_sandboxes_hibernated gauge\n"
      << "sandgate_sandboxes_hibernated " << g.hibernated << "\n"
      << "# HELP sandgate_state_bytes Bytes of hibernated archives in the state directory.\n"
      << "# TYPE sandgate_state_bytes gauge\nsandgate_state_bytes " << g.state_bytes << "\n"
      << "# HELP sandgate_hibernations_total Sandboxes hibernated: idle for "
         "--sandbox-hibernate-after, or earlier to make room for a new one (sandbox_cap, "
         "memory_budget; tenant_share: for one of the same tenant at its share).\n"
      << "# TYPE sandgate_hibernations_total counter\n"
      << "sandgate_hibernations_total{reason=\"idle\"} " << g.hibernations << "\n"
      << "sandgate_hibernations_total{reason=\"sandbox_cap\"} " << hibernated_sandbox_cap_ << "\n"
      << "sandgate_hibernations_total{reason=\"memory_budget\"} " << hibernated_memory_budget_
      << "\n"
      << "sandgate_hibernations_total{reason=\"tenant_share\"} " << hibernated_tenant_share_ << "\n"
      << "# HELP sandgate_resumes_total Sandboxes resumed from hibernation.\n"
      << "# TYPE sandgate_resumes_total counter\nsandgate_resumes_total " << g.resumes << "\n"
      << "# HELP sandgate_state_archives_dropped_total Archives dropped to stay within "
         "--state-max-mb.\n"
      << "# TYPE sandgate_state_archives_dropped_total counter\n"
      << "sandgate_state_archives_dropped_total " << g.archives_dropped << "\n"
      << "# HELP sandgate_idle_sweeps_total Passes of the idle sweep (idle expiry and "
         "hibernation) since start; it rises every sweep interval while the sweep runs.\n"
      << "# TYPE sandgate_idle_sweeps_total counter\n"
      << "sandgate_idle_sweeps_total " << g.idle_sweeps << "\n";
}

// Sessions made, refused and evicted, sandboxes evicted, and authentication.
void Metrics::render_sessions_and_auth(std::ostream& out) const {
  out << "# HELP sandgate_environment_builds_total Environment builds by outcome: ready (built "
         "and verified) or failed.\n"
      << "# TYPE sandgate_environment_builds_total counter\n"
      << "sandgate_environment_builds_total{outcome=\"ready\"} " << env_builds_ready_ << "\n"
      << "sandgate_environment_builds_total{outcome=\"failed\"} " << env_builds_failed_ << "\n";
  out << "# HELP sandgate_sessions_created_total Sessions created.\n"
      << "# TYPE sandgate_sessions_created_total counter\nsandgate_sessions_created_total "
      << sessions_created_ << "\n"
      << "# HELP sandgate_sessions_refused_total initialize refused by a session limit.\n"
      << "# TYPE sandgate_sessions_refused_total counter\nsandgate_sessions_refused_total "
      << sessions_refused_ << "\n"
      << "# HELP sandgate_sessions_evicted_total Idle sessions and handles ended to make room for "
         "a new one, by the cap that was full.\n"
      << "# TYPE sandgate_sessions_evicted_total counter\n"
      << "sandgate_sessions_evicted_total{reason=\"tenant_cap\"} " << evicted_tenant_cap_ << "\n"
      << "sandgate_sessions_evicted_total{reason=\"gateway_cap\"} " << evicted_gateway_cap_ << "\n"
      << "# HELP sandgate_sandboxes_evicted_total Idle sandboxes ended (their session kept) to "
         "make room for a new one, when hibernation is off or failed.\n"
      << "# TYPE sandgate_sandboxes_evicted_total counter\n"
      << "sandgate_sandboxes_evicted_total{reason=\"sandbox_cap\"} " << evicted_sandbox_cap_ << "\n"
      << "sandgate_sandboxes_evicted_total{reason=\"memory_budget\"} " << evicted_memory_budget_
      << "\n"
      << "sandgate_sandboxes_evicted_total{reason=\"tenant_share\"} " << evicted_tenant_share_
      << "\n"
      << "# HELP sandgate_auth_failures_total Requests refused for a missing or wrong token.\n"
      << "# TYPE sandgate_auth_failures_total counter\nsandgate_auth_failures_total "
      << auth_failures_ << "\n"
      << "# HELP sandgate_auth_total Requests by credential kind (static, jwt) and outcome.\n"
      << "# TYPE sandgate_auth_total counter\n";
  {
    std::lock_guard lock(auth_mutex_);
    for (const auto& [key, count] : auth_outcomes_)
      out << "sandgate_auth_total{kind=\"" << key.first << "\",outcome=\"" << key.second << "\"} "
          << count << "\n";
  }
}

// Signing keys, the usage ledger, the egress proxies and the tenants' spend.
void Metrics::render_ledger_and_egress(std::ostream& out) const {
  out << "# HELP sandgate_jwks_refreshes_total Fetches of an issuer's signing keys, by outcome.\n"
      << "# TYPE sandgate_jwks_refreshes_total counter\n"
      << "sandgate_jwks_refreshes_total{outcome=\"ok\"} " << jwks_refreshed_ << "\n"
      << "sandgate_jwks_refreshes_total{outcome=\"failed\"} " << jwks_refresh_failed_ << "\n"
      << "# HELP sandgate_ledger_saves_total Saves of the usage ledger (each a batch), by "
         "outcome.\n"
      << "# TYPE sandgate_ledger_saves_total counter\n"
      << "sandgate_ledger_saves_total{outcome=\"ok\"} " << ledger_saved_ << "\n"
      << "sandgate_ledger_saves_total{outcome=\"failed\"} " << ledger_save_failed_ << "\n"
      << "# HELP sandgate_forwards_total Requests for another replica's session, handle or task: "
         "relayed (ok) or not, that replica unreachable.\n"
      << "# TYPE sandgate_forwards_total counter\n"
      << "sandgate_forwards_total{outcome=\"ok\"} " << forwards_ok_ << "\n"
      << "sandgate_forwards_total{outcome=\"unreachable\"} " << forwards_unreachable_ << "\n"
      << "# HELP sandgate_egress_connections_total Connections through sandboxes' egress "
         "proxies, by how they ended.\n"
      << "# TYPE sandgate_egress_connections_total counter\n"
      << "sandgate_egress_connections_total{outcome=\"relayed\"} " << egress_relayed_ << "\n"
      << "sandgate_egress_connections_total{outcome=\"refused\"} " << egress_refused_ << "\n"
      << "sandgate_egress_connections_total{outcome=\"capped\"} " << egress_capped_ << "\n"
      << "sandgate_egress_connections_total{outcome=\"failed\"} " << egress_failed_ << "\n"
      << "# HELP sandgate_egress_bytes_total Bytes sandboxes' egress proxies relayed, by "
         "direction (up: from the sandbox).\n"
      << "# TYPE sandgate_egress_bytes_total counter\n"
      << "sandgate_egress_bytes_total{direction=\"up\"} " << egress_bytes_up_ << "\n"
      << "sandgate_egress_bytes_total{direction=\"down\"} " << egress_bytes_down_ << "\n"
      << "# HELP sandgate_tenant_spend_usd_total USD spent by tenants' sandboxes, as saved to "
         "the ledger; tenants without a line of their own in the tokens file or OAuth policy "
         "are \"other\".\n"
      << "# TYPE sandgate_tenant_spend_usd_total counter\n";
  {
    std::lock_guard lock(spend_mutex_);
    for (const auto& [label, usd] : tenant_spend_)
      out << "sandgate_tenant_spend_usd_total{tenant=\"" << prometheus_label(label) << "\"} "
          << usd_number(usd) << "\n";
  }
}

// HTTP responses, execute calls and their durations.
void Metrics::render_http_and_executions(std::ostream& out) const {
  out << "# HELP sandgate_http_responses_total HTTP responses by class.\n"
      << "# TYPE sandgate_http_responses_total counter\n"
      << "sandgate_http_responses_total{class=\"2xx\"} " << http_2xx_ << "\n"
      << "sandgate_http_responses_total{class=\"4xx\"} " << http_4xx_ << "\n"
      << "sandgate_http_responses_total{class=\"5xx\"} " << http_5xx_ << "\n"
      << "# HELP sandgate_executions_total execute calls by outcome.\n"
      << "# TYPE sandgate_executions_total counter\n";
  for (std::size_t i = 0; i < executions_.size(); ++i)
    out << "sandgate_executions_total{outcome=\"" << outcome_label(i) << "\"} " << executions_[i]
        << "\n";
  out << "# HELP sandgate_execution_duration_seconds Wall time of execute calls.\n"
      << "# TYPE sandgate_execution_duration_seconds histogram\n";
  std::uint64_t cumulative = 0;
  for (std::size_t b = 0; b < kBuckets.size(); ++b) {
    cumulative += duration_buckets_[b];
    out << "sandgate_execution_duration_seconds_bucket{le=\"" << kBuckets[b] << "\"} " << cumulative
        << "\n";
  }
  cumulative += duration_buckets_[kBuckets.size()];
  out << "sandgate_execution_duration_seconds_bucket{le=\"+Inf\"} " << cumulative << "\n"
      << "sandgate_execution_duration_seconds_sum " << static_cast<double>(duration_micros_) / 1e6
      << "\n"
      << "sandgate_execution_duration_seconds_count " << cumulative << "\n";
}

std::string Metrics::render(const Gauges& g) const {
  std::ostringstream out;
  render_sandboxes(out, g);
  render_pool_and_load(out, g);
  render_sessions_and_auth(out);
  render_ledger_and_egress(out);
  render_tool_calls(out);
  render_http_and_executions(out);
  return out.str();
}

}  // namespace sandgate::server
