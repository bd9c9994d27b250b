#pragma once
// The rules of talking MCP to an upstream in either era that need no connection: the request
// metadata of 2026-07-28, when a `server/discover` answer means "a 2025-era server: initialize
// instead" (the official clients' rule), which 2025 versions are accepted, and the request
// headers 2026-07-28 mirrors from the body (Mcp-Name, Mcp-Param-*), with their encoding.
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace sandgate::upstream {

inline constexpr std::string_view kModernVersion = "2026-07-28";
inline constexpr std::string_view kLegacyVersion = "2025-11-25";

// The `_meta` every 2026-07-28 request carries: the version, no client capabilities (sandgate
// answers no sampling, elicitation or roots) and the client's name.
nlohmann::json modern_meta();
// clientInfo for `initialize`.
nlohmann::json client_info();

// True when a server/discover answer says the upstream is of the 2025 era: 400 with -32000 (the
// v1 SDK's "no session"), 404 or 200 with -32601 (method not found), or a 400/404 whose body is
// no JSON-RPC error at all.
bool falls_back_to_initialize(int status, const nlohmann::json& body);

// The version an upstream answered `initialize` with, if sandgate speaks it.
bool accepted_legacy_version(const std::string& version);

// A header value as 2026-07-28 sends it: as is when it is plain visible ASCII (spaces inside,
// not at the ends), else `=?base64?…?=` of its UTF-8 (also for a plain value that looks like one).
std::string mirrored_header_value(std::string_view value);

// Whether every "x-mcp-header" of a tool's input schema is one the spec allows: a token, unique
// (case-insensitively), on a string, integer or boolean property reached only through
// "properties". A tool with a bad one is left out of the list (the spec's rule for clients).
bool valid_header_annotations(const nlohmann::json& input_schema);

// The Mcp-Param-* headers for a call: each annotated property present in the arguments.
std::vector<std::pair<std::string, std::string>> param_headers(const nlohmann::json& input_schema,
                                                               const nlohmann::json& arguments);

}  // namespace sandgate::upstream
