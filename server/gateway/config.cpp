#include "server/gateway/config.hpp"

#include <unistd.h>

#include <algorithm>
#include <boost/algorithm/string/predicate.hpp>
#include <boost/asio/ip/address.hpp>
#include <cctype>
#include <cstdlib>
#include <functional>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string_view>
#include <variant>

#include "common/host_port.hpp"
#include "sandbox/file_util.hpp"
#include "server/gateway/config_option.hpp"
#include "session/session_id.hpp"

namespace sandgate::server {
namespace {

using namespace options_detail;

void set_listen(Config& c, const std::string& v) {
  auto split = split_listen_address(v);
  auto* parts = std::get_if<HostPort>(&split);
  if (!parts)
    throw std::invalid_argument(
        "expected HOST:PORT (an IPv6 address in brackets, the port from 0 to 65535)");
  c.http.listen_host = std::string(parts->host);
  c.http.listen_port = *parts->port;
}

constexpr std::uint64_t MiB = 1 << 20;

bool is_label_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-';
}

// The rows of serving: where and how the gateway listens, and who may call it.
std::vector<Option> serving_options() {
  return {
      {"--listen", "SANDGATE_LISTEN", "127.0.0.1:8080",
       "Address and port to serve MCP on (HOST:PORT; port 0 picks one).", set_listen},
      {"--token-file", "SANDGATE_TOKEN_FILE", "",
       "Tokens file: one tenant per line, '<sha256 of token> <tenant> [max_sessions=N] "
       "[spend_cap_usd=X] [max_concurrent_calls=N] [max_sandboxes=N] "
       "[budget_usd_per_day=X] [budget_usd_per_month=X] [egress=HOST[:PORT],...] "
       "[egress_connections=N] [egress_mb_per_call=N] [egress_mb_per_sandbox=N] "
       "[environments=NAME,...] [secrets=NAME,...] [upstreams=NAME,...]'. Refused if "
       "group/world-writable; SIGHUP reloads it.",
       [](Config& c, const std::string& v) { c.auth.token_file = v; }},
      {"--no-auth", "SANDGATE_NO_AUTH", "false",
       "Serve without tokens. Refused unless listening on loopback.",
       [](Config& c, const std::string& v) { c.auth.no_auth = to_bool(v); }, true},
      {"--tls-cert", "SANDGATE_TLS_CERT", "",
       "PEM certificate chain: serve HTTPS (with --tls-key).",
       [](Config& c, const std::string& v) { c.http.tls_cert = v; }},
      {"--tls-key", "SANDGATE_TLS_KEY", "", "PEM private key for --tls-cert.",
       [](Config& c, const std::string& v) { c.http.tls_key = v; }},
      {"--allowed-origins", "SANDGATE_ALLOWED_ORIGINS", "",
       "Comma-separated Origin values accepted besides loopback ones (e.g. "
       "https://app.example.com).",
       [](Config& c, const std::string& v) { c.origins.allowed_origins = to_list(v); }},
      {"--allowed-hosts", "SANDGATE_ALLOWED_HOSTS", "",
       "Comma-separated Host header values accepted when listening on loopback (a proxy's public "
       "name).",
       [](Config& c, const std::string& v) { c.origins.allowed_hosts = to_list(v); }},
  };
}

// The rows of the process: its threads, its shutdown and its log.
std::vector<Option> process_options() {
  return {
      {"--threads", "SANDGATE_THREADS", "cores", "I/O threads.",
       [](Config& c, const std::string& v) {
         c.threads = static_cast<unsigned>(to_u64(v, 1, 256));
       }},
      {"--shutdown-grace", "SANDGATE_SHUTDOWN_GRACE", "10",
       "Seconds in-flight requests get to finish on SIGTERM/SIGINT.",
       [](Config& c, const std::string& v) {
         c.shutdown_grace = std::chrono::seconds(to_u64(v, 0, 3600));
       }},
      {"--log-level", "SANDGATE_LOG_LEVEL", "info",
       "debug, info, warn or error. Logs are JSON lines of metadata only.",
       [](Config& c, const std::string& v) {
         if (v != "debug" && v != "info" && v != "warn" && v != "error")
           throw std::invalid_argument("expected debug, info, warn or error");
         c.log_level = v;
       }},
      {"--stdio", nullptr, "",
       "Serve one MCP session over standard input and output (the MCP stdio transport: "
       "newline-delimited JSON-RPC, logs on stderr) instead of HTTP, for a client that starts "
       "sandgate itself; no token (the client is the local user). Its sandbox ends when stdin "
       "closes. Prints on stderr which isolation layers this host gives and which it lacks; as an "
       "ordinary user it accepts sandboxes without cgroup limits where it cannot write one (and "
       "says so).",
       [](Config& c, const std::string& v) { c.stdio = to_bool(v); }, true},
      {"--check-isolation", nullptr, "",
       "Print which isolation mechanisms this host offers and which will be used, then exit (1 "
       "when execute would be refused).",
       [](Config& c, const std::string& v) { c.check_isolation = to_bool(v); }, true},
  };
}

// Every row, in the order help and the docs list them.
std::vector<Option> option_rows() {
  std::vector<Option> table = serving_options();
  for (const auto& rows :
       {session_options(), call_options(), sandbox_options(), replica_options(), process_options()})
    table.insert(table.end(), rows.begin(), rows.end());
  // The ledger rows after --state-dir, where the SQLite ledger lives.
  auto ledger = ledger_options();
  auto state_dir = std::find_if(table.begin(), table.end(), [](const Option& o) {
    return std::string_view(o.flag) == "--state-dir";
  });
  table.insert(state_dir + 1, ledger.begin(), ledger.end());
  // The OAuth rows right after the other credentials' (--token-file, --no-auth).
  auto oauth = oauth_options();
  auto after = std::find_if(table.begin(), table.end(), [](const Option& o) {
    return std::string_view(o.flag) == "--no-auth";
  });
  table.insert(after + 1, oauth.begin(), oauth.end());
  // The egress rows after the prices, the last of which is theirs.
  auto egress = egress_options();
  auto prices = std::find_if(table.begin(), table.end(), [](const Option& o) {
    return std::string_view(o.flag) == "--price-gib-hour";
  });
  auto secrets = secrets_options();
  egress.insert(egress.end(), secrets.begin(), secrets.end());
  table.insert(prices + 1, egress.begin(), egress.end());
  // The environments after the pool, whose ready sandboxes they have their own of.
  auto environments = environment_options();
  auto pool = std::find_if(table.begin(), table.end(), [](const Option& o) {
    return std::string_view(o.flag) == "--pool-preload";
  });
  table.insert(pool + 1, environments.begin(), environments.end());
  // Code mode's after the egress and secrets rows: another way out of the sandbox.
  auto upstreams = upstream_options();
  auto last_secret = std::find_if(table.begin(), table.end(), [&secrets](const Option& o) {
    return std::string_view(o.flag) == secrets.back().flag;
  });
  table.insert(last_secret + 1, upstreams.begin(), upstreams.end());
  return table;
}

const std::vector<Option>& options() {
  static const std::vector<Option> table = option_rows();
  return table;
}

std::string usage() {
  std::ostringstream out;
  out << "Usage: sandgate [options]\n\n"
         "A Streamable HTTP MCP gateway whose `execute` tool runs code in a per-session sandbox.\n"
         "Each option can also be set by its environment variable; flags win.\n"
         "SANDGATE_TOKEN (environment only) sets a single token for tenant \"default\".\n\n";
  for (const auto& o : options()) {
    out << "  " << o.flag << (o.is_switch ? "" : " VALUE");
    if (o.env) out << "   [" << o.env << "]";
    out << "\n      " << o.help;
    if (o.fallback && *o.fallback) out << " Default: " << o.fallback << ".";
    out << "\n";
  }
  out << "  --help, --version\n";
  return out.str();
}

// Settings that follow from others and from where the gateway runs, for serving and for
// --check-isolation alike.
void derive(Config& c) {
  // Over stdio the client is the local user who started the process: no token, and nothing
  // listens on the network.
  if (c.stdio) {
    c.auth.no_auth = true;
    c.http.listen_host = "127.0.0.1";
    // An ordinary user on a laptop has no cgroup of its own to write (unless systemd delegates
    // one): it gets the sandbox the host allows, and stderr says which limits it lacks.
    if (::geteuid() != 0) c.host.accept_no_cgroups = true;
  }
  if (!c.uid_base_set)
    c.host.uid_base = sandbox::automatic_uid_base(
        c.host.max_sandboxes, sandbox::read_file("/proc/self/uid_map").value_or(""),
        sandbox::read_file("/proc/self/gid_map").value_or(""));
}

std::string validate(Config& c) {
  if (!c.http.tls_cert.empty() != !c.http.tls_key.empty())
    return "--tls-cert and --tls-key go together";
  if (c.tools.timeout_default_s > c.tools.timeout_max_s)
    return "--timeout-default exceeds --timeout-max";
  if (!c.registry.replica_name.empty() && !session::is_replica_name(c.registry.replica_name))
    return "--replica-name must be a DNS label (1-63 lower-case letters, digits and '-', no '-' "
           "at either end) that is not a number (all digits, or 0x and hex digits)";
  if (c.auth.no_auth) {
    if (!is_loopback_host(c.http.listen_host))
      return "--no-auth is only allowed when listening on loopback (127.0.0.1, ::1 or localhost)";
  } else if (c.auth.token_file.empty() && c.auth.token.empty() && !c.auth.oauth.enabled()) {
    return "no token: set SANDGATE_TOKEN, --token-file or --oauth-issuer (or --no-auth on "
           "loopback)";
  }
  if (auto problem = oauth_problem(c); !problem.empty()) return problem;
  return "";
}

// The host of a peer URL template's authority; nullopt when what follows it is not ":PORT". The
// split reads '{replica}' as a label of its own length, so the host keeps it where it was; a host
// the split refuses is returned whole, for the label checks to say what is wrong with it.
std::optional<std::string_view> authority_host(std::string_view authority,
                                               std::string_view marker) {
  std::string readable(authority);
  if (auto at = readable.find(marker); at != std::string::npos)
    readable.replace(at, marker.size(), std::string(marker.size(), 'r'));
  auto split = split_host_port(readable);
  if (auto* parts = std::get_if<HostPort>(&split))  // an IPv6 literal: whole, refused below
    return parts->ipv6 ? authority : authority.substr(0, parts->host.size());
  auto error = std::get<HostPortError>(split);
  if (error == HostPortError::missing_port || error == HostPortError::bad_port) return std::nullopt;
  return authority;
}

}  // namespace

// Why a --peer-url-template is refused ("" when it is fine). The replica name in it comes from
// the session id a client sends: the host must be `[prefix]{replica}.<suffix>` with a fixed DNS
// suffix whose last label is not numeric, so whatever the name, the host is a DNS name under
// that suffix and never an IP address ("http://{replica}:8080" with a session id
// "2130706433.<hex>" made the gateway connect to 127.0.0.1 with the client's token).
std::string peer_url_template_problem(std::string_view url) {
  const std::string expected =
      "expected http://{replica}.DNS-SUFFIX[:PORT][/PATH], e.g. "
      "http://{replica}.sandgate-peers:8080";
  constexpr std::string_view scheme = "http://", marker = "{replica}";
  if (url.substr(0, scheme.size()) != scheme) return expected;
  auto first = url.find(marker);
  if (first == std::string_view::npos || url.find(marker, first + 1) != std::string_view::npos)
    return expected + " ('{replica}' exactly once)";
  std::string_view authority = url.substr(scheme.size());
  authority = authority.substr(0, authority.find('/'));
  auto host_of = authority_host(authority, marker);
  if (!host_of) return expected + " (the port must be a number from 1 to 65535)";
  std::string_view host = *host_of;
  auto at = host.find(marker);
  if (at == std::string_view::npos) return expected + " ('{replica}' must be in the host)";
  if (!std::all_of(host.begin(), host.begin() + at, is_label_char))
    return expected + " (only letters, digits and '-' may precede '{replica}' in its label)";
  std::string_view suffix = host.substr(at + marker.size());
  if (suffix.size() < 2 || suffix.front() != '.')
    return expected + " (a fixed DNS suffix must follow '{replica}.')";
  suffix.remove_prefix(1);
  std::string_view last;
  for (std::size_t pos = 0; pos <= suffix.size();) {
    auto dot = suffix.find('.', pos);
    auto label =
        suffix.substr(pos, dot == std::string_view::npos ? std::string_view::npos : dot - pos);
    if (label.empty() || label.size() > 63 ||
        !std::all_of(label.begin(), label.end(), is_label_char))
      return expected + " (the suffix must be DNS labels: lower-case letters, digits, '-')";
    last = label;
    if (dot == std::string_view::npos) break;
    pos = dot + 1;
  }
  if (std::all_of(last.begin(), last.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return expected + " (the suffix's last label must not be a number)";
  return "";
}

HttpConfig effective_http_config(const Config& config) {
  HttpConfig http = config.http;
  http.peer_secret = config.peers.secret;
  http.body_limit_bytes = effective_body_limit(config);
  return http;
}

ToolLimits effective_tool_limits(const Config& config) {
  ToolLimits tools = config.tools;
  tools.output_max_bytes = config.host.limits.output_bytes;
  tools.idle_timeout = config.registry.idle_timeout;
  return tools;
}

McpEndpointConfig mcp_endpoint_config(const Config& config) {
  McpEndpointConfig mcp;
  mcp.origins = config.origins;
  mcp.listening_on_loopback = is_loopback_host(config.http.listen_host);
  mcp.peers = config.peers;
  mcp.replica_name = config.registry.replica_name;
  mcp.owners_keep_sessions = !config.state.dir.empty();
  // A forwarded call may take as long as a call may run, plus room for its sandbox's start.
  mcp.forward_wait = std::chrono::seconds(config.tools.timeout_max_s) + std::chrono::seconds(120);
  mcp.tasks = config.tasks;
  return mcp;
}

std::uint64_t effective_body_limit(const Config& config) {
  // Files arrive in base64: 4 bytes for every 3.
  return config.http.body_limit_bytes ? config.http.body_limit_bytes
                                      : 2 * MiB + config.tools.stdin_max_bytes +
                                            (config.tools.files_in_max_bytes + 2) / 3 * 4;
}

ParseOutcome parse_config(int argc, char** argv, char** envp) {
  Config c;
  auto fail = [](std::string text) {
    return ParseOutcome{std::nullopt, std::move(text) + "\n", 2};
  };
  // Environment first, flags after: flags win.
  for (char** e = envp; e && *e; ++e) {
    std::string_view kv(*e);
    auto eq = kv.find('=');
    if (eq == std::string_view::npos) continue;
    std::string name(kv.substr(0, eq)), value(kv.substr(eq + 1));
    if (name == "SANDGATE_TOKEN") {
      c.auth.token = value;
      continue;
    }
    for (const auto& o : options()) {
      if (!o.env || name != o.env) continue;
      try {
        o.set(c, value);
      } catch (const std::exception& ex) {
        return fail(std::string(o.env) + ": " + ex.what());
      }
    }
  }
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") return {std::nullopt, usage(), 0};
    if (arg == "--version") return {std::nullopt, "sandgate " SANDGATE_VERSION "\n", 0};
    if (arg == "--help-markdown") return {std::nullopt, options_markdown(), 0};
    std::string name = arg, value;
    bool inline_value = false;
    if (auto eq = arg.find('='); eq != std::string::npos) {
      name = arg.substr(0, eq);
      value = arg.substr(eq + 1);
      inline_value = true;
    }
    const Option* match = nullptr;
    for (const auto& o : options())
      if (name == o.flag) match = &o;
    if (!match) return fail("unknown option " + name + " (see --help)");
    if (!match->is_switch && !inline_value) {
      if (i + 1 >= argc) return fail(name + " needs a value");
      value = argv[++i];
    }
    if (match->is_switch && !inline_value) value = "true";
    try {
      match->set(c, value);
    } catch (const std::exception& ex) {
      return fail(name + ": " + ex.what());
    }
  }
  derive(c);
  if (c.check_isolation) return {c, "", 0};
  if (auto problem = validate(c); !problem.empty()) return fail("sandgate: " + problem);
  return {c, "", 0};
}

std::vector<std::string> options_whose_shown_default_differs() {
  std::vector<std::string> differ;
  for (const auto& o : options()) {
    if (!o.set || !o.fallback || !*o.fallback) continue;
    Config c;
    try {
      o.set(c, o.fallback);
    } catch (const std::exception&) {
      continue;  // a default described in words ("half of --max-concurrent-calls")
    }
    if (!(c == Config{})) differ.push_back(o.flag);
  }
  return differ;
}

std::string options_markdown() {
  std::ostringstream out;
  out << "| flag | environment | default | meaning |\n|---|---|---|---|\n";
  for (const auto& o : options()) {
    out << "| `" << o.flag << "` | " << (o.env ? std::string("`") + o.env + "`" : "") << " | "
        << o.fallback << " | " << o.help << " |\n";
  }
  out << "| | `SANDGATE_TOKEN` | | A single token for tenant `default` (environment only). |\n";
  return out.str();
}

}  // namespace sandgate::server
