#include "server/admin/admin_requests.hpp"

#include <chrono>
#include <nlohmann/json.hpp>

#include "common/bounded_json.hpp"
#include "common/logging.hpp"
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

}  // namespace

std::string answer_admin_request(session::Registry& registry, std::string_view request,
                                 unsigned peer_uid) {
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
  return failure("unknown op (sessions, end)");
}

}  // namespace sandgate::server
