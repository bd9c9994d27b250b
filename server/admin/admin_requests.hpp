#pragma once
// What the admin channel answers (one JSON line in, one out), and the log line of every action:
//   {"op":"sessions"[,"tenant":T]}        → {"ok":true,"sessions":[{session, kind, tenant,
//                                            age_s, idle_s, state, spend_usd, calls}, …]}
//   {"op":"end","session":PREFIX_OR_ID}   → {"ok":true,"ended":[prefix, …]}
//   {"op":"end","tenant":T}               → the same, for all of T's sessions and handles
//   {"op":"connections"[,"tenant":T][,"session":PREFIX_OR_ID][,"since_s":N]}
//                                         → {"ok":true,"connections":[{time, duration_ms,
//                                            session, tenant, method, host, port, outcome,
//                                            reason, secret, bytes_up, bytes_down}, …],
//                                            "kept":{per_tenant, hours}} (issue #44): the
//                                            egress connections this replica remembers, oldest
//                                            first (egress/connection_history.hpp)
// Failures: {"ok":false,"error":"…"}. Sessions are named by their log prefix (session_id.hpp),
// never by their whole id, which is bearer-ish.
#include <string>
#include <string_view>

namespace sandgate::session {
class Registry;
}
namespace sandgate::egress {
class ConnectionHistory;
}

namespace sandgate::server {

// What a running call of a session the operator ended is told (and a later request, in the
// 404's hint or a handle's tool error).
inline constexpr const char* kOperatorEndedWhy = "the gateway's operator ended this session";

// `connections`: the gateway's record of egress connections (null: none is kept, and the
// connections op says so).
std::string answer_admin_request(session::Registry& registry, std::string_view request,
                                 unsigned peer_uid,
                                 const egress::ConnectionHistory* connections = nullptr);

}  // namespace sandgate::server
