#pragma once
// Session ids: 128 bits from the OpenSSL CSPRNG, as 32 lowercase hex characters (visible ASCII,
// as the transport requires), optionally prefixed by the owning replica's name.
#include <string>
#include <string_view>

namespace sandgate::session {

// With a replica name, "<replica>.<hex>": the id names the replica that holds the session.
std::string new_session_id(std::string_view replica = {});
// Sandbox handles (2026-07-28's explicit state, passed back as a tool argument): the same 128
// random bits and replica prefix, after "sbx_", so that a handle is never taken for a
// session id, nor a session id for a handle.
std::string new_handle_id(std::string_view replica = {});
// Task ids (a tool call that runs on after its request was answered): the same, after "task_".
std::string new_task_id(std::string_view replica = {});
// Cheap shape checks before any lookup (ids from clients are hostile).
bool looks_like_session_id(std::string_view id);
bool looks_like_handle(std::string_view id);
bool looks_like_task_id(std::string_view id);
// The replica named in an id ("" when it names none).
std::string_view owner_replica(std::string_view id);
// Replica names are DNS labels: [a-z0-9-], 1..63 characters, no '-' at either end, and not
// a number in any form a resolver accepts for an address (all digits, 0x + hex digits).
bool is_replica_name(std::string_view name);
// The first characters, safe to log.
std::string_view log_prefix(std::string_view id);

}  // namespace sandgate::session
