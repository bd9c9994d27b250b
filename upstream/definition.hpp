#pragma once
// The operator's upstream MCP servers (issue #45): the `--upstreams` file, a JSON object of
// name → definition, e.g.
//   {"tickets": {"url": "https://mcp.tickets.example/mcp",
//                "headers": {"Authorization": {"file": "/etc/sandgate/tickets-token",
//                                              "prefix": "Bearer "}},
//                "tools": ["search", "get_ticket"],
//                "description": "the support ticket system",
//                "limits": {"timeout_s": 30, "max_concurrency": 32,
//                           "max_answer_bytes": 4194304, "tools_ttl_s": 300,
//                           "usd_per_call": 0.001}}}
// Header values are credentials: read from files that only their owner may read, never logged,
// never shown to a sandbox or a client.
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace sandgate::upstream {

struct UpstreamLimits {
  // One tool call, within the execute call's own timeout (whichever ends first).
  std::chrono::milliseconds call_timeout{60'000};
  // Calls in flight to this upstream, all tenants together; each tenant gets a share.
  std::uint32_t max_concurrency = 32;
  // An answer (one response, JSON or its whole event stream) beyond this is refused: too_large.
  std::uint64_t max_answer_bytes = 4u << 20;
  // How long a tool list is kept when the upstream's answer names no ttlMs.
  std::chrono::seconds tools_ttl{300};
  // Added to the calling sandbox's spend (and its tenant's budget) for each call made.
  double usd_per_call = 0;

  bool operator==(const UpstreamLimits&) const = default;
};

struct UpstreamDefinition {
  std::string name;  // [a-z][a-z0-9_]{0,31}: also a Python and JavaScript identifier
  std::string url;   // as written: https://…, or http:// to a loopback address only
  bool tls = false;
  std::string host;    // without brackets
  std::string port;    // digits
  std::string target;  // path and query, "/" at least
  // Sent on every request to the upstream. Values are secret.
  std::vector<std::pair<std::string, std::string>> headers;
  // The tools a tenant may call; nullopt: all the upstream lists.
  std::optional<std::vector<std::string>> tools;
  std::string description;  // for the model; may be empty
  std::string ca_file;      // PEM file to verify the upstream's certificate; "": the system store
  UpstreamLimits limits;

  bool allows(const std::string& tool) const;
  // A reload keeps an upstream's catalog and gate when its definition is the same.
  bool operator==(const UpstreamDefinition&) const = default;
};

using UpstreamSet = std::map<std::string, std::shared_ptr<const UpstreamDefinition>>;

// Reads and checks the whole file; throws std::invalid_argument naming the upstream, the key and
// why ("upstream 'tickets': headers.Authorization: /etc/x is readable by its group or others").
UpstreamSet read_upstreams_file(const std::filesystem::path& path);
// The same from text (tests, fuzzing); header files are still read from disk.
UpstreamSet parse_upstreams(const std::string& text);

}  // namespace sandgate::upstream
