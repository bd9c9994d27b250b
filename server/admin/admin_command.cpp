#include "server/admin/admin_command.hpp"

#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
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
    "Speaks to the gateway running with --state-dir DIR (default: $SANDGATE_STATE_DIR) through\n"
    "its admin socket, DIR/admin.sock, as the gateway's own user.\n"
    "sessions: its live sessions and sandbox handles (of tenant T): prefix, kind, tenant, age,\n"
    "idle time, sandbox (live, hibernated, none), spend so far, calls running or waiting, and\n"
    "the environment it runs in.\n"
    "end: ends a session or handle (by the prefix `sessions` shows, or its whole id), or every\n"
    "one of tenant T's, with their sandboxes and hibernated files; a running call is told the\n"
    "operator ended it.\n";

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

struct AdminArgs {
  std::string state_dir;
  std::optional<std::string> tenant, session;
  bool as_json = false;
};

// The flags after the verb; nothing (with `why`) on an unknown flag or a missing value.
std::optional<AdminArgs> parse_args(const std::string& verb, const std::vector<std::string>& args,
                                    char** envp, std::string& why) {
  AdminArgs a;
  a.state_dir = env_value(envp, "SANDGATE_STATE_DIR");
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& flag = args[i];
    if (flag == "--json" && verb == "sessions") {
      a.as_json = true;
      continue;
    }
    if (flag != "--state-dir" && flag != "--tenant" && !(flag == "--session" && verb == "end")) {
      why = "unknown option " + flag;
      return std::nullopt;
    }
    if (i + 1 >= args.size() || args[i + 1].empty()) {
      why = flag + " needs a value";
      return std::nullopt;
    }
    const std::string& value = args[++i];
    if (flag == "--state-dir")
      a.state_dir = value;
    else if (flag == "--tenant")
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
  return verb == "sessions" || verb == "end";
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
  } else {
    for (const auto& prefix : reply["ended"]) out << "ended " << prefix.get<std::string>() << "\n";
  }
  return 0;
}

}  // namespace sandgate::server
