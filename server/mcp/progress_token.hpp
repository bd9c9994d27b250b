#pragma once
// A request's _meta.progressToken, checked before anything is sent for it. MCP says a progress
// token is a string or an integer; every progress notification of the request repeats it, so an
// unbounded one would multiply a client's bytes by the notifications waiting for it (a 1 MB
// token grew the gateway by ~4 MB a second). A string is bounded too.
#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>

namespace sandgate::server {

inline constexpr std::size_t kMaxProgressTokenBytes = 256;

// What is wrong with the token in `meta` (a request's _meta, or anything else when it has
// none): "" when there is no token or a valid one, else the message of an invalid-params error.
std::string progress_token_problem(const nlohmann::json& meta);

// The token of `meta` once it passed progress_token_problem: null when there is none.
nlohmann::json progress_token_of(const nlohmann::json& meta);

}  // namespace sandgate::server
