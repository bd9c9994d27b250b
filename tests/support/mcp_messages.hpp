#pragma once
// The MCP messages and headers the test and benchmark clients send, built in one place so that
// every client speaks the same protocol revision the same way.
#include <nlohmann/json.hpp>
#include <string>

#include "tests/support/http_client.hpp"

namespace sandgate::test {

inline constexpr const char* kSessionRevision = "2025-11-25";    // initialize + Mcp-Session-Id
inline constexpr const char* kStatelessRevision = "2026-07-28";  // no session, _meta per request

// A 2025-11-25 POST's headers: JSON body, both answer forms accepted, Bearer `token` (sent even
// when empty); with `session`, the session id and the protocol version.
Headers mcp_headers(const std::string& session, const std::string& token);

json initialize_message(int id, const std::string& client_name);
json initialized_notification();
// tools/call of `tool` with `arguments`.
json tool_call_message(int id, const std::string& tool, json arguments);
// The params of such a call (for the 2026-07-28 message and requests built around them).
json tool_call_params(const std::string& tool, json arguments);
// `message` (a tools/call, of either era) made a task request (`task`: its params, e.g. a ttl),
// or asking for progress under `token`.
json as_task(json message, json task = json::object());
json with_progress_token(json message, json token);
// The arguments of an `execute` call; without a timeout, the gateway's default applies.
json execute_arguments(const std::string& code, const std::string& language, int timeout_seconds);
json execute_arguments(const std::string& code, const std::string& language);

// A 2026-07-28 request (no session): params carry the _meta envelope.
json stateless_message(const std::string& method, json params, int id = 1);
// A 2026-07-28 tools/call of `tool` with `arguments`.
json stateless_tool_call(const std::string& tool, json arguments, int id = 1);
// Its headers: mcp_headers without a session, and the revision, the method (and the tool's name
// for tools/call) mirrored.
Headers stateless_headers(const json& message, const std::string& token);

}  // namespace sandgate::test
