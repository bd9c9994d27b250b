#pragma once
// Every setting of the gateway: a flag, an SANDGATE_* environment variable, a default and a
// line of help, from one table (config.cpp), so --help and docs/configuration.md cannot drift.
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sandbox/host.hpp"
#include "session/registry.hpp"

namespace sandgate::server {

struct Config {
  std::string listen_host = "127.0.0.1";
  std::uint16_t listen_port = 8080;
  std::string token_file;
  std::string token;  // SANDGATE_TOKEN only: a token on the command line shows in `ps`
  bool no_auth = false;
  std::string tls_cert, tls_key;
  std::vector<std::string> allowed_origins;  // in addition to loopback origins
  std::vector<std::string> allowed_hosts;    // Host header values accepted besides loopback

  std::uint64_t body_limit_bytes = 0;  // 0: 2 MiB + the stdin cap + the files cap in base64
  std::uint64_t stdin_max_bytes = 1 << 20;
  // execute's files in and out.
  std::uint64_t file_in_max_bytes = 10 << 20;
  std::uint64_t files_in_max_bytes = 10 << 20;
  std::uint32_t return_files_max = 20;
  std::uint64_t file_inline_max_bytes = 256 << 10;
  std::uint64_t resource_read_max_bytes = 50 << 20;
  std::uint32_t timeout_default_s = 60;
  std::uint32_t timeout_max_s = 300;
  std::chrono::seconds header_timeout{30};
  std::chrono::seconds body_timeout{60};
  std::uint32_t max_connections = 1024;
  // Unset: max(8, max_connections / 4) (effective_connections_per_address); 0: no cap.
  std::optional<std::uint32_t> max_connections_per_address;
  std::chrono::seconds progress_interval{5};
  // Tasks (tool calls that run on after their request is answered).
  std::uint32_t task_timeout_max_s = 1800;
  std::chrono::milliseconds task_after{10'000};
  std::chrono::seconds task_ttl_max{2 * 3600};
  std::uint32_t tasks_per_tenant = 100;
  std::uint64_t task_results_max_bytes = 64u << 20;

  std::uint32_t max_concurrent_calls = 64;
  std::uint32_t max_queued_calls = 1024;
  session::RegistryConfig registry;
  // Hibernation's archives: --state-dir (empty: a private directory, see default_state_dir)
  // and their total cap.
  std::string state_dir;
  std::uint64_t state_max_bytes = 4096ull << 20;
  sandbox::HostConfig host;
  bool uid_base_set = false;  // --sandbox-uid-base given; otherwise chosen from the id maps

  // Several replicas: this one's name (prefixes its session ids) and how to reach the others.
  std::string replica_name;
  std::vector<std::pair<std::string, std::string>> peers;  // name -> http://host:port
  std::string peer_url_template;                           // "{replica}" is replaced

  unsigned threads = 0;  // 0: one per core
  std::chrono::seconds shutdown_grace{10};
  std::string log_level = "info";

  bool check_isolation = false;  // print the isolation report and exit

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

bool is_loopback_host(std::string_view host);
// Why a --peer-url-template would let a client steer forwarding ("" when it cannot).
std::string peer_url_template_problem(std::string_view url);
std::uint64_t effective_body_limit(const Config& config);
// Connections one client address may hold at once; 0 means no cap.
std::uint32_t effective_connections_per_address(const Config& config);

}  // namespace sandgate::server
