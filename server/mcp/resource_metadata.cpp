#include "resource_metadata.hpp"

#include <nlohmann/json.hpp>

#include "auth/http_url.hpp"

namespace sandgate::server {
namespace {

constexpr std::string_view kWellKnown = "/.well-known/oauth-protected-resource";

// An RFC 9110 quoted-string's content: quote and backslash escaped, control characters dropped.
std::string quoted_string(std::string_view text) {
  std::string out = "\"";
  for (char c : text) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) continue;
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

std::string joined(const std::vector<std::string>& words) {
  std::string out;
  for (const auto& word : words) out += (out.empty() ? "" : " ") + word;
  return out;
}

}  // namespace

std::string resource_metadata_url(const std::string& resource_url) {
  std::string problem;
  auto url = auth::parse_http_url(resource_url, problem);
  if (!url) return {};
  return url->origin() + std::string(kWellKnown) + url->path;
}

std::vector<std::string> resource_metadata_paths(const std::string& resource_url) {
  std::vector<std::string> paths{std::string(kWellKnown) + "/mcp", std::string(kWellKnown)};
  std::string problem;
  if (auto url = auth::parse_http_url(resource_url, problem);
      url && !url->path.empty() && url->path != "/mcp")
    paths.push_back(std::string(kWellKnown) + url->path);
  return paths;
}

std::string resource_metadata_document(const auth::OAuthConfig& config) {
  nlohmann::json doc = {{"resource", config.resource_url},
                        {"authorization_servers", config.issuers},
                        {"scopes_supported", config.scopes},
                        {"bearer_methods_supported", {"header"}},
                        {"resource_name", config.resource_name}};
  if (!config.resource_documentation.empty())
    doc["resource_documentation"] = config.resource_documentation;
  return doc.dump(2) + "\n";
}

AuthChallenge::AuthChallenge(const auth::OAuthConfig& config)
    : metadata_url_(resource_metadata_url(config.resource_url)), scope_(joined(config.scopes)) {}

std::string AuthChallenge::header(std::string_view error, std::string_view description) const {
  if (!oauth()) {
    std::string out = "Bearer realm=\"sandgate\"";
    if (!error.empty()) out += ", error=" + quoted_string(error);
    return out;
  }
  std::string out = "Bearer ";
  if (!error.empty()) {
    out += "error=" + quoted_string(error) + ", ";
    if (!description.empty()) out += "error_description=" + quoted_string(description) + ", ";
  }
  out += "resource_metadata=" + quoted_string(metadata_url_);
  if (!scope_.empty()) out += ", scope=" + quoted_string(scope_);
  return out;
}

}  // namespace sandgate::server
