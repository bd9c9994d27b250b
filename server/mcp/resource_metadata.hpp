#pragma once
// This gateway as an OAuth protected resource (RFC 9728): the metadata document that tells a
// client which authorization servers issue tokens for it and which scopes to ask for, where
// that document is, and the WWW-Authenticate challenges (RFC 6750 §3) that point a client to it.
#include <string>
#include <string_view>
#include <vector>

#include "auth/oauth_config.hpp"

namespace sandgate::server {

// The metadata's URL for a resource URL, the well-known part inserted between host and path
// (https://h/mcp -> https://h/.well-known/oauth-protected-resource/mcp).
std::string resource_metadata_url(const std::string& resource_url);
// The paths this gateway serves the metadata at: the path-inserted form for the resource's own
// path and for /mcp, and the root form (clients of the first MCP authorization drafts ask there).
std::vector<std::string> resource_metadata_paths(const std::string& resource_url);
std::string resource_metadata_document(const auth::OAuthConfig& config);

// What a refusal of credentials says in WWW-Authenticate.
class AuthChallenge {
 public:
  AuthChallenge() = default;  // no OAuth: a plain Bearer challenge
  explicit AuthChallenge(const auth::OAuthConfig& config);

  bool oauth() const { return !metadata_url_.empty(); }
  const std::string& metadata_url() const { return metadata_url_; }
  // `error` empty (no credentials at all), "invalid_token", "insufficient_scope" or
  // "invalid_request"; `description` is quoted here.
  std::string header(std::string_view error = {}, std::string_view description = {}) const;

 private:
  std::string metadata_url_;
  std::string scope_;  // space-separated
};

}  // namespace sandgate::server
