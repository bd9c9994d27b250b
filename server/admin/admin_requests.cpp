#include "server/admin/admin_requests.hpp"

#include <chrono>
#include <cstdio>
#include <ctime>
#include <nlohmann/json.hpp>
#include <optional>

#include "common/bounded_json.hpp"
#include "common/logging.hpp"
#include "egress/connection_history.hpp"
#include "session/registry.hpp"
#include "session/session_id.hpp"

namespace sandgate::server {
namespace {

using nlohmann::json;

// Tenant names and session prefixes are short words; anything longer is not one.
constexpr std::size_t kMaxNameBytes = 256;

std::string failure(const std::string& why) {
  return json{{"ok", false}, {"error", why}}.dump();
}

// The string field `name` of the request: nothing when absent, "" with `bad` set when it is not
// a string of at most kMaxNameBytes, or empty.
std::optional<std::string> string_field(const json& request, const char* name, bool& bad) {
  auto it = request.find(name);
  if (it == request.end()) return std::nullopt;
  if (!it->is_string() || it->get_ref<const std::string&>().empty() ||
      it->get_ref<const std::string&>().size() > kMaxNameBytes) {
    bad = true;
    return std::nullopt;
  }
  return it->get<std::string>();
}

long seconds_since(session::Session::Clock::time_point then,
                   session::Session::Clock::time_point now) {
  return static_cast<long>(std::chrono::duration_cast<std::chrono::seconds>(now - then).count());
}

std::string list_sessions(session::Registry& registry, const std::string& tenant, unsigned uid) {
  const auto now = session::Session::Clock::now();
  json rows = json::array();
  for (const auto& s : registry.summaries(tenant))
    rows.push_back({{"session", std::string(session::log_prefix(s.id))},
                    {"kind", s.kind == session::SessionKind::handle ? "handle" : "session"},
                    {"tenant", s.tenant},
                    {"age_s", seconds_since(s.created, now)},
                    {"idle_s", seconds_since(s.last_used, now)},
                    {"state", s.live         ? "live"
                              : s.hibernated ? "hibernated"
                                             : "none"},
                    {"spend_usd", s.spend_usd},
                    {"calls", s.calls},
                    {"environment", s.environment}});
  log_event(LogLevel::info, "admin_action",
            {{"peer_uid", uid},
             {"action", "sessions"},
             {"tenant", tenant.empty() ? "(all)" : tenant},
             {"sessions", rows.size()}});
  return json{{"ok", true}, {"sessions", std::move(rows)}}.dump();
}

// Ends the session or handle named by its whole id or its log prefix (one only), or every one of
// a tenant's.
std::string end_sessions(session::Registry& registry, const std::optional<std::string>& session,
                         const std::optional<std::string>& tenant, unsigned uid) {
  std::vector<std::string> ended;
  if (session) {
    auto named = [&](const std::string& id) {
      return id == *session || session::log_prefix(id) == *session;
    };
    std::size_t matches = 0;
    for (const auto& s : registry.summaries())
      if (named(s.id)) ++matches;
    if (matches > 1)
      return failure("more than one session starts with " + *session + "; give its whole id");
    ended = registry.end_where([&](const session::Session& s) { return named(s.id()); },
                               kOperatorEndedWhy);
  } else {
    ended = registry.end_tenant(*tenant, kOperatorEndedWhy);
  }
  json prefixes = json::array();
  for (const auto& id : ended) prefixes.push_back(std::string(session::log_prefix(id)));
  log_event(LogLevel::warn, "admin_action",
            {{"peer_uid", uid},
             {"action", "end"},
             {session ? "session" : "tenant",
              session ? std::string(session::log_prefix(*session)) : *tenant},
             {"ended", prefixes}});
  if (ended.empty())
    return failure(session ? "no live session or handle is named " + *session
                           : "tenant " + *tenant + " has no live session or handle");
  return json{{"ok", true}, {"ended", std::move(prefixes)}}.dump();
}

// "2025-05-01T12:00:03.250Z": a connection's start, in UTC.
std::string utc_text(std::chrono::system_clock::time_point at) {
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(at.time_since_epoch());
  const std::time_t seconds = static_cast<std::time_t>(ms.count() / 1000);
  std::tm utc{};
  ::gmtime_r(&seconds, &utc);
  char text[64];
  std::snprintf(text, sizeof text, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", utc.tm_year + 1900,
                utc.tm_mon + 1, utc.tm_mday, utc.tm_hour, utc.tm_min, utc.tm_sec,
                static_cast<int>(ms.count() % 1000));
  return text;
}

// The egress connections of a tenant, a session (its prefix, or its whole id), or all, that
// ended within `since` (zero: all kept).
std::string list_connections(const egress::ConnectionHistory& history,
                             const std::optional<std::string>& tenant,
                             const std::optional<std::string>& session, std::chrono::seconds since,
                             unsigned uid) {
  egress::ConnectionHistory::Query query;
  query.tenant = tenant.value_or("");
  query.session = session ? std::string(session::log_prefix(*session)) : "";
  query.since = since;
  json rows = json::array();
  for (const auto& c : history.find(query)) {
    json row = {{"time", utc_text(c.started)},
                {"duration_ms", c.duration_ms},
                {"session", c.session},
                {"tenant", c.tenant},
                {"method", c.method},
                {"host", c.host},
                {"port", c.port},
                {"outcome", c.outcome},
                {"bytes_up", c.bytes_up},
                {"bytes_down", c.bytes_down}};
    if (!c.reason.empty()) row["reason"] = c.reason;
    if (!c.secret.empty()) row["secret"] = c.secret;
    rows.push_back(std::move(row));
  }
  log_event(LogLevel::info, "admin_action",
            {{"peer_uid", uid},
             {"action", "connections"},
             {"tenant", tenant.value_or("(all)")},
             {"session", session ? std::string(session::log_prefix(*session)) : "(all)"},
             {"since_s", since.count()},
             {"connections", rows.size()}});
  return json{{"ok", true},
              {"connections", std::move(rows)},
              {"kept",
               {{"per_tenant", egress::ConnectionHistory::kPerTenant},
                {"hours", egress::ConnectionHistory::kKept.count()}}}}
      .dump();
}

// The request's since_s: absent is zero (all kept); else a whole number of seconds.
std::optional<std::chrono::seconds> since_field(const json& request) {
  auto it = request.find("since_s");
  if (it == request.end()) return std::chrono::seconds(0);
  if (!it->is_number_unsigned() || it->get<std::uint64_t>() > 10ull * 365 * 86400)
    return std::nullopt;
  return std::chrono::seconds(it->get<std::int64_t>());
}

}  // namespace

std::string answer_admin_request(session::Registry& registry, std::string_view request,
                                 unsigned peer_uid, const egress::ConnectionHistory* connections) {
  auto parsed = parse_bounded_json(request, 4);
  if (parsed.fault != JsonFault::none || !parsed.value.is_object())
    return failure("the request is not a JSON object");
  const json& r = parsed.value;
  auto op = r.find("op");
  if (op == r.end() || !op->is_string()) return failure("the request names no op");
  bool bad = false;
  auto tenant = string_field(r, "tenant", bad);
  auto session = string_field(r, "session", bad);
  if (bad) return failure("tenant and session must be non-empty strings of at most 256 bytes");
  if (*op == "sessions") {
    if (session) return failure("sessions takes a tenant, not a session");
    return list_sessions(registry, tenant.value_or(""), peer_uid);
  }
  if (*op == "end") {
    if (session.has_value() == tenant.has_value())
      return failure("end takes exactly one of a session and a tenant");
    return end_sessions(registry, session, tenant, peer_uid);
  }
  if (*op == "connections") {
    auto since = since_field(r);
    if (!since) return failure("since_s must be a whole number of seconds");
    if (connections == nullptr) return failure("this gateway keeps no record of connections");
    return list_connections(*connections, tenant, session, *since, peer_uid);
  }
  return failure("unknown op (sessions, end, connections)");
}

}  // namespace sandgate::server
