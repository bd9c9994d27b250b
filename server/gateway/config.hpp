#pragma once
// Every setting of the gateway: a flag, an SANDGATE_* environment variable, a default and a
// line of help, from one table (config.cpp), so --help and docs/configuration.md cannot drift.
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "auth/auth_config.hpp"
#include "environment/environments_config.hpp"
#include "ledger/ledger_config.hpp"
#include "sandbox/host.hpp"
#include "server/http/http_config.hpp"
#include "server/mcp/mcp_config.hpp"
#include "server/tools/tool_limits.hpp"
#include "session/call_slots.hpp"
#include "session/registry.hpp"
#include "session/state_store.hpp"
#include "tenant/tenant_terms.hpp"
#include "upstream/tool_channel.hpp"

namespace sandgate::server {

// The gateway keeps a pool of ready sandboxes (the sandbox library's default is none).
inline sandbox::HostConfig gateway_host_defaults() {
  sandbox::HostConfig host;
  host.pool = {2, {"numpy", "pandas", "matplotlib.pyplot"}};
  return host;
}

struct Config {
  // Each layer's settings, with their defaults in the layer's own struct.
  HttpConfig http;
  OriginPolicy origins;
  ToolLimits tools;    // execute: timeouts, stdin, files in and out, progress, task timeout
  TaskLimits tasks;    // calls that run on after their request is answered
  ReplicaPeers peers;  // several replicas; this one's name is registry.replica_name
  session::RegistryConfig registry;
  // What every tenant gets unless its tokens-file or OAuth policy line says otherwise (the shares
  // left 0 here are worked out from the gateway's pools: tenant_defaults()).
  tenant::TenantTerms tenants;
  sandbox::HostConfig host = gateway_host_defaults();

  auth::AuthConfig auth;
  // --secrets-file (issue #44): loaded with the credentials, reloaded on SIGHUP.
  std::string secrets_file;

  session::CallPoolConfig calls;                 // the gateway-wide call slots and queue
  session::StateConfig state;                    // hibernation's archives and the saved registry
  environment::EnvironmentsConfig environments;  // the operator's environments (issue #43)
  // Code mode (issue #45): the upstreams file ("": none) and the tool channels' bounds.
  struct Upstreams {
    std::string file;
    upstream::ChannelLimits limits;

    bool operator==(const Upstreams&) const = default;
  } upstreams;
  ledger::LedgerConfig ledger;  // where usage is recorded
  bool uid_base_set = false;    // --sandbox-uid-base given; otherwise chosen from the id maps

  unsigned threads = 0;  // 0: one per core
  std::chrono::seconds shutdown_grace{10};
  std::string log_level = "info";

  bool check_isolation = false;  // print the isolation report and exit
  bool stdio = false;  // one MCP session over stdin/stdout instead of HTTP (server/stdio/)

  bool operator==(const Config&) const = default;
};

// Parses flags (which win) over environment variables. Returns a message and no config when
// the user asked for --help/--version (message to stdout, exit 0) or got something wrong
// (message to stderr, exit 2).
struct ParseOutcome {
  std::optional<Config> config;
  std::string message;
  int exit_code = 0;
};
ParseOutcome parse_config(int argc, char** argv, char** envp);

// The options whose default, as --help shows it, would not give Config{}'s value when set
// (empty when the help table and the struct agree; a unit test keeps it so).
std::vector<std::string> options_whose_shown_default_differs();

// The whole option table in Markdown, for docs/configuration.md (`sandgate --help-markdown`).
std::string options_markdown();

// Why a --peer-url-template would let a client steer forwarding ("" when it cannot).
std::string peer_url_template_problem(std::string_view url);
// The request body limit: --body-limit-bytes, or room for the largest stdin and files a call
// may send (files arrive in base64).
std::uint64_t effective_body_limit(const Config& config);
// Each layer's settings with what it takes from the others filled in: the HTTP body limit, the
// tool's output cap and idle timeout, the endpoint's replicas, forwarding wait and tasks.
HttpConfig effective_http_config(const Config& config);
ToolLimits effective_tool_limits(const Config& config);
McpEndpointConfig mcp_endpoint_config(const Config& config);

}  // namespace sandgate::server
