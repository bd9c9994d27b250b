#include "server/admin/admin_command.hpp"

#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <iomanip>
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <sstream>

#include "common/bounded_json.hpp"
#include "common/unique_fd.hpp"
#include "server/admin/admin_channel.hpp"

namespace sandgate::server {
namespace {

using nlohmann::json;

constexpr const char* kHelp =
    "usage: sandgate sessions --state-dir DIR [--tenant T] [--json]\n"
    "       sandgate end --state-dir DIR (--session PREFIX_OR_ID | --tenant T)\n"
    "       sandgate connections --state-dir DIR [--session PREFIX_OR_ID] [--tenant T]\n"
    "                            [--since DURATION] [--json]\n"
    "Speaks to the gateway running with --state-dir DIR (default: $SANDGATE_STATE_DIR) through\n"
    "its admin socket, DIR/admin.sock, as the gateway's own user.\n"
    "sessions: its live sessions and sandbox handles (of tenant T): prefix, kind, tenant, age,\n"
    "idle time, sandbox (live, hibernated, none), spend so far, calls running or waiting, and\n"
    "the environment it runs in.\n"
    "end: ends a session or handle (by the prefix `sessions` shows, or its whole id), or every\n"
    "one of tenant T's, with their sandboxes and hibernated files; a running call is told the\n"
    "operator ended it.\n"
    "connections: the egress connections of a session, a tenant or all that ended within\n"
    "DURATION (30s, 10m, 2h, 1d; default: all kept): when each started (UTC), session, tenant,\n"
    "method, host:port, outcome and why, bytes each way, the secret applied (by name). Kept in\n"
    "this replica's memory only: the last 2000 per tenant within 24 hours, lost at restart;\n"
    "the egress_connection log lines are the durable record.\n";

// An answer may list every session: 50,000 at about 200 bytes each, with room to spare.
constexpr std::size_t kMaxAnswerBytes = 64u << 20;
// Ending many sessions kills their processes one after another.
constexpr int kAnswerSeconds = 120;

std::string env_value(char** envp, const char* name) {
  const std::size_t n = std::strlen(name);
  for (char** e = envp; e && *e; ++e)
    if (std::strncmp(*e, name, n) == 0 && (*e)[n] == '=') return *e + n + 1;
  return "";
}

// One request line to the channel at `path`, and its answer line; nothing (with `why`) when the
// gateway cannot be reached.
std::optional<std::string> ask(const std::string& path, const std::string& request,
                               std::string& why) {
  sockaddr_un address{};
  if (path.size() >= sizeof address.sun_path) {
    why = path + " is too long for a unix socket";
    return std::nullopt;
  }
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  address.sun_family = AF_UNIX;
  std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
  if (!fd ||
      ::connect(fd.get(), reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0) {
    why = "cannot reach the gateway's admin socket " + path + ": " + std::strerror(errno) +
          " (is a gateway running with this --state-dir, and are you its user?)";
    return std::nullopt;
  }
  timeval limit{kAnswerSeconds, 0};
  ::setsockopt(fd.get(), SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof limit);
  const std::string line = request + "\n";
  if (::send(fd.get(), line.data(), line.size(), MSG_NOSIGNAL) !=
      static_cast<ssize_t>(line.size())) {
    why = std::string("cannot send to the gateway: ") + std::strerror(errno);
    return std::nullopt;
  }
  std::string answer;
  char buffer[65536];
  for (;;) {
    const ssize_t n = ::recv(fd.get(), buffer, sizeof buffer, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      why = std::string("no answer from the gateway: ") + std::strerror(errno);
      return std::nullopt;
    }
    if (n == 0) break;
    answer.append(buffer, static_cast<std::size_t>(n));
    if (answer.size() > kMaxAnswerBytes) {
      why = "the gateway's answer is too long";
      return std::nullopt;
    }
  }
  if (answer.empty() || answer.back() != '\n') {
    why = "the gateway closed the connection without a whole answer";
    return std::nullopt;
  }
  answer.pop_back();
  return answer;
}

// 75 → "1m15s", 3725 → "1h02m", 90000 → "1d01h".
std::string duration_text(long s) {
  char text[32];
  if (s < 60)
    std::snprintf(text, sizeof text, "%lds", s);
  else if (s < 3600)
    std::snprintf(text, sizeof text, "%ldm%02lds", s / 60, s % 60);
  else if (s < 86400)
    std::snprintf(text, sizeof text, "%ldh%02ldm", s / 3600, (s % 3600) / 60);
  else
    std::snprintf(text, sizeof text, "%ldd%02ldh", s / 86400, (s % 86400) / 3600);
  return text;
}

void print_table(const json& sessions, std::ostream& out) {
  out << std::left << std::setw(14) << "SESSION" << std::setw(9) << "KIND" << std::setw(20)
      << "TENANT" << std::setw(8) << "AGE" << std::setw(8) << "IDLE" << std::setw(12) << "SANDBOX"
      << std::setw(12) << "SPEND_USD" << std::setw(7) << "CALLS"
      << "ENVIRONMENT\n";
  for (const auto& s : sessions) {
    char spend[32];
    std::snprintf(spend, sizeof spend, "%.6f", s.value("spend_usd", 0.0));
    out << std::setw(14) << s.value("session", "") << std::setw(9) << s.value("kind", "")
        << std::setw(20) << s.value("tenant", "") << std::setw(8)
        << duration_text(s.value("age_s", 0L)) << std::setw(8)
        << duration_text(s.value("idle_s", 0L)) << std::setw(12) << s.value("state", "")
        << std::setw(12) << spend << std::setw(7) << s.value("calls", 0)
        << s.value("environment", "") << "\n";
  }
  out << sessions.size() << (sessions.size() == 1 ? " session\n" : " sessions\n");
}

// 9999 → "9999", 250000 → "244.1K", 2500000 → "2.4M": bytes, short enough for a column.
std::string bytes_text(std::uint64_t n) {
  char text[32];
  if (n < 10000)
    std::snprintf(text, sizeof text, "%llu", static_cast<unsigned long long>(n));
  else if (n < (1ull << 20))
    std::snprintf(text, sizeof text, "%.1fK", static_cast<double>(n) / 1024);
  else
    std::snprintf(text, sizeof text, "%.1fM", static_cast<double>(n) / (1 << 20));
  return text;
}

void print_connections(const json& connections, std::ostream& out) {
  out << std::left << std::setw(25) << "STARTED (UTC)" << std::setw(14) << "SESSION"
      << std::setw(16) << "TENANT" << std::setw(9) << "METHOD" << std::setw(9) << "OUTCOME"
      << std::setw(8) << "UP" << std::setw(8) << "DOWN" << std::setw(12) << "SECRET"
      << std::setw(32) << "HOST:PORT"
      << "REASON\n";
  for (const auto& c : connections) {
    std::string host = c.value("host", "-");
    if (host.find(':') != std::string::npos) host = "[" + host + "]";
    const std::string destination = host + ":" + std::to_string(c.value("port", 0));
    out << std::setw(25) << c.value("time", "") << std::setw(14) << c.value("session", "")
        << std::setw(16) << c.value("tenant", "") << std::setw(9) << c.value("method", "")
        << std::setw(9) << c.value("outcome", "") << std::setw(8)
        << bytes_text(c.value("bytes_up", std::uint64_t{0})) << std::setw(8)
        << bytes_text(c.value("bytes_down", std::uint64_t{0})) << std::setw(12)
        << c.value("secret", "-") << std::setw(32) << destination << " " << c.value("reason", "")
        << "\n";
  }
  out << connections.size() << (connections.size() == 1 ? " connection\n" : " connections\n");
}

// "90" / "90s" → 90, "10m" → 600, "2h", "1d"; nothing when it is not one of those.
std::optional<long> seconds_of(const std::string& text) {
  if (text.empty() || text.size() > 12) return std::nullopt;
  std::size_t digits = 0;
  while (digits < text.size() && std::isdigit(static_cast<unsigned char>(text[digits]))) ++digits;
  if (digits == 0) return std::nullopt;
  const std::string unit = text.substr(digits);
  long scale = 0;
  if (unit.empty() || unit == "s")
    scale = 1;
  else if (unit == "m")
    scale = 60;
  else if (unit == "h")
    scale = 3600;
  else if (unit == "d")
    scale = 86400;
  else
    return std::nullopt;
  const long n = std::stol(text.substr(0, digits));
  if (n <= 0 || n > 3650L * 86400 / scale) return std::nullopt;
  return n * scale;
}

struct AdminArgs {
  std::string state_dir;
  std::optional<std::string> tenant, session;
  std::optional<long> since_s;
  bool as_json = false;
};

// The flags after the verb; nothing (with `why`) on an unknown flag or a missing value.
std::optional<AdminArgs> parse_args(const std::string& verb, const std::vector<std::string>& args,
                                    char** envp, std::string& why) {
  AdminArgs a;
  a.state_dir = env_value(envp, "SANDGATE_STATE_DIR");
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& flag = args[i];
    const bool listing = verb == "sessions" || verb == "connections";
    if (flag == "--json" && listing) {
      a.as_json = true;
      continue;
    }
    const bool takes_session = verb == "end" || verb == "connections";
    if (flag != "--state-dir" && flag != "--tenant" && !(flag == "--session" && takes_session) &&
        !(flag == "--since" && verb == "connections")) {
      why = "unknown option " + flag;
      return std::nullopt;
    }
    if (i + 1 >= args.size() || args[i + 1].empty()) {
      why = flag + " needs a value";
      return std::nullopt;
    }
    const std::string& value = args[++i];
    if (flag == "--state-dir") {
      a.state_dir = value;
    } else if (flag == "--since") {
      a.since_s = seconds_of(value);
      if (!a.since_s) {
        why =
            "--since takes a duration such as 30s, 10m, 2h or 1d (at most 10 years), not " + value;
        return std::nullopt;
      }
    } else if (flag == "--tenant")
      a.tenant = value;
    else
      a.session = value;
  }
  if (a.state_dir.empty()) {
    why = "--state-dir is required (or SANDGATE_STATE_DIR)";
    return std::nullopt;
  }
  if (verb == "end" && a.session.has_value() == a.tenant.has_value()) {
    why = "end takes exactly one of --session and --tenant";
    return std::nullopt;
  }
  return a;
}

}  // namespace

bool is_admin_verb(const std::string& verb) {
  return verb == "sessions" || verb == "end" || verb == "connections";
}

int admin_command(const std::string& verb, const std::vector<std::string>& args, char** envp,
                  std::ostream& out, std::ostream& err) {
  for (const auto& a : args)
    if (a == "--help" || a == "-h") {
      out << kHelp;
      return 0;
    }
  std::string why;
  auto parsed = parse_args(verb, args, envp, why);
  if (!parsed) {
    err << "sandgate " << verb << ": " << why << "\n" << kHelp;
    return 2;
  }
  json request = {{"op", verb}};
  if (parsed->tenant) request["tenant"] = *parsed->tenant;
  if (parsed->session) request["session"] = *parsed->session;
  if (parsed->since_s) request["since_s"] = *parsed->since_s;
  auto answer = ask(admin_socket_path(parsed->state_dir), request.dump(), why);
  if (!answer) {
    err << "sandgate " << verb << ": " << why << "\n";
    return 1;
  }
  auto parsed_answer = parse_bounded_json(*answer, 8);
  const json& reply = parsed_answer.value;
  if (parsed_answer.fault != JsonFault::none || !reply.is_object()) {
    err << "sandgate " << verb << ": the gateway's answer is not JSON\n";
    return 1;
  }
  if (!reply.value("ok", false)) {
    err << "sandgate " << verb << ": " << reply.value("error", "refused") << "\n";
    return 1;
  }
  if (verb == "sessions") {
    if (parsed->as_json)
      out << reply["sessions"].dump(2) << "\n";
    else
      print_table(reply["sessions"], out);
  } else if (verb == "connections") {
    if (parsed->as_json)
      out << reply["connections"].dump(2) << "\n";
    else
      print_connections(reply["connections"], out);
  } else {
    for (const auto& prefix : reply["ended"]) out << "ended " << prefix.get<std::string>() << "\n";
  }
  return 0;
}

}  // namespace sandgate::server
