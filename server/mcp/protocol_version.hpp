#pragma once
// The protocol revisions this server speaks, newest first.
#include <string_view>

namespace sandgate::server {

// The session-based revisions (initialize, Mcp-Session-Id).
constexpr std::string_view kSessionVersions[] = {"2025-11-25", "2025-06-18", "2025-03-26"};
constexpr std::string_view kLatestSessionVersion = kSessionVersions[0];

bool is_session_version(std::string_view version);

// The stateless revisions (no session: every request carries its version and capabilities).
constexpr std::string_view kStatelessVersions[] = {"2026-07-28"};
bool is_stateless_version(std::string_view version);

// Every revision served, newest first (server/discover's supportedVersions).
constexpr std::string_view kAllVersions[] = {"2026-07-28", "2025-11-25", "2025-06-18",
                                             "2025-03-26"};

// The server's name and version, as initialize and server/discover tell them.
constexpr std::string_view kServerName = "sandgate";
constexpr std::string_view kServerTitle = "sandgate code sandbox";
constexpr std::string_view kServerVersion = SANDGATE_VERSION;  // the CMake project's

}  // namespace sandgate::server
