#pragma once
// The protocol revisions this server speaks, newest first.
#include <string_view>

namespace sandgate::server {

// The session-based revisions (initialize, Mcp-Session-Id).
constexpr std::string_view kSessionVersions[] = {"2025-11-25", "2025-06-18", "2025-03-26"};
constexpr std::string_view kLatestSessionVersion = kSessionVersions[0];

bool is_session_version(std::string_view version);

}  // namespace sandgate::server
