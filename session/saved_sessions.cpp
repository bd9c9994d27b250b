#include "saved_sessions.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <nlohmann/json.hpp>
#include <unordered_set>

#include "common/bounded_json.hpp"
#include "common/durable_file.hpp"
#include "common/tenant_name.hpp"
#include "session_id.hpp"

namespace sandgate::session {
namespace {

using nlohmann::json;

constexpr const char* kFormat = "sandgate-sessions";
constexpr int kVersion = 1;
constexpr const char* kTempName = "sessions.json.tmp";
// {"sessions": [ {...} ]}: three levels, and one more for what a later version may add to an
// entry; anything deeper is not this file.
constexpr std::size_t kMaxDepth = 4;
constexpr double kMaxSpendUsd = 1e12;

const char* sandbox_name(SavedSandbox s) {
  switch (s) {
    case SavedSandbox::none:
      return "none";
    case SavedSandbox::live:
      return "live";
    case SavedSandbox::hibernated:
      return "hibernated";
  }
  return "none";
}

bool is_tenant_name(const std::string& s) {
  if (s.empty() || s.size() > kMaxTenantNameBytes) return false;
  for (unsigned char c : s)
    if (c < 0x21 || c == 0x7f) return false;  // tokens-file names are single words
  return true;
}

// 2200-01-01 in ms: later than any real clock, and well within the range of the nanosecond
// clocks the times become (they end in 2262; converting a larger value would overflow).
constexpr std::int64_t kMaxUnixMs = 7'258'118'400'000;

std::optional<std::int64_t> unix_ms(const json& entry, const char* key) {
  auto it = entry.find(key);
  if (it == entry.end() || !it->is_number_integer()) return std::nullopt;
  if (it->is_number_unsigned() && it->get<std::uint64_t>() > std::uint64_t(kMaxUnixMs))
    return std::nullopt;
  auto v = it->get<std::int64_t>();
  if (v < 0 || v > kMaxUnixMs) return std::nullopt;
  return v;
}

std::optional<std::string> text_field(const json& entry, const char* key) {
  auto it = entry.find(key);
  if (it == entry.end() || !it->is_string()) return std::nullopt;
  return it->get<std::string>();
}

// The steps of parse_entry: each reads one field (or two) of an entry into `s`, or says in
// `problem` why the entry is refused.
bool parse_kind(const json& entry, SavedSession& s, std::string& problem) {
  auto kind = text_field(entry, "kind");
  if (kind == "session")
    s.kind = SessionKind::session;
  else if (kind == "handle")
    s.kind = SessionKind::handle;
  else {
    problem = "an entry has no valid kind";
    return false;
  }
  return true;
}

// After parse_kind: the form an id must have depends on the kind.
bool parse_id(const json& entry, const std::string& replica, SavedSession& s,
              std::string& problem) {
  auto id = text_field(entry, "id");
  bool id_ok =
      id && (s.kind == SessionKind::session ? looks_like_session_id(*id) : looks_like_handle(*id));
  if (!id_ok) {
    problem = "an entry's id is not a session id or handle";
    return false;
  }
  // Only this replica's own sessions: one named for another replica is that replica's.
  if (owner_replica(*id) != replica) {
    problem = "an entry's id names another replica";
    return false;
  }
  s.id = std::move(*id);
  return true;
}

bool parse_tenant(const json& entry, SavedSession& s, std::string& problem) {
  auto tenant = text_field(entry, "tenant");
  if (!tenant || !is_tenant_name(*tenant)) {
    problem = "an entry has no valid tenant";
    return false;
  }
  s.tenant = std::move(*tenant);
  return true;
}

bool parse_times(const json& entry, SavedSession& s, std::string& problem) {
  auto created = unix_ms(entry, "created_unix_ms");
  auto used = unix_ms(entry, "last_used_unix_ms");
  if (!created || !used) {
    problem = "an entry has no valid times";
    return false;
  }
  s.created_unix_ms = *created;
  s.last_used_unix_ms = *used;
  return true;
}

bool parse_spend(const json& entry, SavedSession& s, std::string& problem) {
  auto spend = entry.find("spend_usd");
  if (spend == entry.end() || !spend->is_number() || !std::isfinite(spend->get<double>()) ||
      spend->get<double>() < 0 || spend->get<double>() > kMaxSpendUsd) {
    problem = "an entry has no valid spend";
    return false;
  }
  s.spend_usd = spend->get<double>();
  return true;
}

bool parse_sandbox_state(const json& entry, SavedSession& s, std::string& problem) {
  auto sandbox = text_field(entry, "sandbox");
  if (sandbox == "none")
    s.sandbox = SavedSandbox::none;
  else if (sandbox == "live")
    s.sandbox = SavedSandbox::live;
  else if (sandbox == "hibernated")
    s.sandbox = SavedSandbox::hibernated;
  else {
    problem = "an entry has no valid sandbox state";
    return false;
  }
  return true;
}

// One entry, checked field by field; the reason it is refused otherwise.
std::optional<SavedSession> parse_entry(const json& entry, const std::string& replica,
                                        std::string& problem) {
  if (!entry.is_object()) {
    problem = "an entry is not an object";
    return std::nullopt;
  }
  SavedSession s;
  // In this order, stopping at the first failure: `problem` names the first field wrong, as
  // the log has always said it.
  bool ok = parse_kind(entry, s, problem) && parse_id(entry, replica, s, problem) &&
            parse_tenant(entry, s, problem) && parse_times(entry, s, problem) &&
            parse_spend(entry, s, problem) && parse_sandbox_state(entry, s, problem);
  if (!ok) return std::nullopt;
  // Optional (registries written before environments have none): an environment's name only.
  auto environment = entry.find("environment");
  if (environment != entry.end()) {
    bool named = environment->is_string() && !environment->get<std::string>().empty() &&
                 environment->get<std::string>().size() <= 63;
    if (named)
      for (char c : environment->get<std::string>())
        named = named && ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_');
    if (!named) {
      problem = "an entry has no valid environment";
      return std::nullopt;
    }
    s.environment = environment->get<std::string>();
  }
  return s;
}

std::string errno_text(const char* what) {
  return std::string(what) + ": " + std::strerror(errno);
}

}  // namespace

std::string serialize(const SavedRegistry& registry) {
  // Written by hand, one entry a line: the gateway checkpoints this on a timer, and a JSON tree
  // of 50,000 entries costs far more than the text. Names are quoted by nlohmann (invalid UTF-8
  // replaced, never thrown on); ids are the gateway's own ([a-z0-9._-] only).
  auto quoted = [](const std::string& s) {
    return json(s).dump(-1, ' ', false, json::error_handler_t::replace);
  };
  auto number = [](double v) {
    char buf[32];
    auto [end, ec] = std::to_chars(buf, buf + sizeof buf, std::isfinite(v) ? v : 0.0);
    return ec == std::errc() ? std::string(buf, end) : std::string("0");
  };
  std::string out = std::string("{\"format\":\"") + kFormat +
                    "\",\"version\":" + std::to_string(kVersion) +
                    ",\"replica\":" + quoted(registry.replica) + ",\"sessions\":[";
  out.reserve(out.size() + registry.sessions.size() * 220);
  const char* separator = "\n";
  for (const auto& s : registry.sessions) {
    out += separator;
    separator = ",\n";
    out += "{\"id\":\"" + s.id + "\",\"kind\":\"" +
           (s.kind == SessionKind::handle ? "handle" : "session") +
           "\",\"tenant\":" + quoted(s.tenant) +
           ",\"created_unix_ms\":" + std::to_string(s.created_unix_ms) +
           ",\"last_used_unix_ms\":" + std::to_string(s.last_used_unix_ms) +
           ",\"spend_usd\":" + number(s.spend_usd) + ",\"sandbox\":\"" + sandbox_name(s.sandbox) +
           "\"" + (s.environment.empty() ? "" : ",\"environment\":" + quoted(s.environment)) + "}";
  }
  out += "\n]}\n";
  return out;
}

ParsedRegistry parse_saved_registry(std::string_view text) {
  ParsedRegistry out;
  if (text.size() > kMaxSavedBytes) {
    out.problem = "the file is larger than " + std::to_string(kMaxSavedBytes >> 20) + " MiB";
    return out;
  }
  auto parsed = parse_bounded_json(text, kMaxDepth);
  json& doc = parsed.value;
  if (parsed.fault != JsonFault::none || !doc.is_object()) {
    out.problem = "the file is not a JSON object of at most four levels (torn or foreign)";
    return out;
  }
  if (text_field(doc, "format") != kFormat) {
    out.problem = "the file is not a sandgate session registry";
    return out;
  }
  auto version = doc.find("version");
  if (version == doc.end() || !version->is_number_integer() || version->get<long>() != kVersion) {
    out.problem = "the file's version is not one this gateway reads";
    return out;
  }
  auto replica = text_field(doc, "replica");
  if (!replica || (!replica->empty() && !is_replica_name(*replica))) {
    out.problem = "the file names no valid replica";
    return out;
  }
  auto sessions = doc.find("sessions");
  if (sessions == doc.end() || !sessions->is_array()) {
    out.problem = "the file has no list of sessions";
    return out;
  }
  SavedRegistry registry;
  registry.replica = *replica;
  std::unordered_set<std::string> seen;
  for (const auto& entry : *sessions) {
    std::string problem;
    auto s = parse_entry(entry, registry.replica, problem);
    if (s && !seen.insert(s->id).second) problem = "an id appears twice";
    if (!s || !problem.empty()) {
      if (out.skipped++ == 0) out.problem = problem;
      continue;
    }
    registry.sessions.push_back(std::move(*s));
  }
  out.registry = std::move(registry);
  return out;
}

bool write_saved_registry(const std::string& dir, const std::string& text, std::string& error) {
  int dir_fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (dir_fd < 0) {
    error = errno_text("cannot open the state directory");
    return false;
  }
  bool ok = sandgate::replace_file_durably(dir_fd, kSavedSessionsFile, kTempName, text);
  if (!ok) error = errno_text("cannot write the registry file");
  ::close(dir_fd);
  return ok;
}

SavedFile read_saved_registry(const std::string& dir) {
  SavedFile out;
  std::string path = dir + "/" + kSavedSessionsFile;
  int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    if (errno == ENOENT)
      out.absent = true;
    else
      out.problem = errno_text("cannot open it");  // a symlink (ELOOP), no permission, ...
    return out;
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != ::geteuid() ||
      (st.st_mode & 0077) != 0) {
    out.problem = "it is not a private (0600) regular file of this user";
  } else if (static_cast<std::uint64_t>(st.st_size) > kMaxSavedBytes) {
    out.problem = "it is larger than " + std::to_string(kMaxSavedBytes >> 20) + " MiB";
  } else {
    std::string text(static_cast<std::size_t>(st.st_size), '\0');
    std::size_t done = 0;
    while (done < text.size()) {
      ssize_t n = ::read(fd, text.data() + done, text.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      done += static_cast<std::size_t>(n);
    }
    if (done == text.size())
      out.text = std::move(text);
    else
      out.problem = "it could not be read whole";
  }
  ::close(fd);
  return out;
}

}  // namespace sandgate::session
