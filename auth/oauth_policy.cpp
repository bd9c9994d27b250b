#include "auth/oauth_policy.hpp"

#include <fstream>
#include <sstream>
#include <stdexcept>

namespace sandgate::auth {

bool is_usable_tenant_claim(std::string_view value) {
  if (value.empty() || value.size() > kMaxTenantClaimBytes) return false;
  for (char c : value)
    if (c <= 0x20 || c >= 0x7f || c == '"' || c == '\\') return false;
  return true;
}

std::string oauth_tenant_name(std::string_view issuer, std::string_view claim_value) {
  for (std::string_view scheme : {"https://", "http://"})
    if (issuer.substr(0, scheme.size()) == scheme) issuer.remove_prefix(scheme.size());
  while (!issuer.empty() && issuer.back() == '/') issuer.remove_suffix(1);
  std::string name(issuer);
  name += '#';
  name += claim_value;
  return name;
}

OAuthPolicy OAuthPolicy::parse(std::string_view text, const Tenant& defaults) {
  OAuthPolicy policy;
  policy.defaults_ = defaults;
  std::istringstream in{std::string(text)};
  std::string line;
  int line_no = 0;
  bool defaults_seen = false;
  while (std::getline(in, line)) {
    ++line_no;
    // Tenant names hold '#': only one at the start or after white space opens a comment.
    for (std::size_t i = 0; i < line.size(); ++i)
      if (line[i] == '#' && (i == 0 || line[i - 1] == ' ' || line[i - 1] == '\t')) {
        line.resize(i);
        break;
      }
    std::istringstream words(line);
    std::string name;
    if (!(words >> name)) continue;
    std::string where = "OAuth policy file line " + std::to_string(line_no);
    Tenant tenant = defaults;
    tenant.name = name;
    int option_no = 0;
    for (std::string option; words >> option;)
      tenant::apply_tenant_option(tenant, option, where, ++option_no);
    if (name == "*") {
      if (defaults_seen) throw std::runtime_error(where + ": a second '*' line");
      defaults_seen = true;
      policy.defaults_ = std::move(tenant);
    } else if (name.find('#') == std::string::npos) {
      throw std::runtime_error(where +
                               ": expected '*' or a tenant name '<issuer host/path>#<claim>'");
    } else if (!policy.named_.emplace(name, std::move(tenant)).second) {
      throw std::runtime_error(where + ": this tenant is already listed");
    }
  }
  return policy;
}

OAuthPolicy OAuthPolicy::load(const std::string& path, const Tenant& defaults) {
  if (path.empty()) return parse("", defaults);
  std::ifstream file(path);
  if (!file) throw std::runtime_error("cannot read the OAuth policy file");
  std::ostringstream text;
  text << file.rdbuf();
  return parse(text.str(), defaults);
}

std::shared_ptr<const Tenant> OAuthPolicy::tenant(const std::string& name) const {
  auto it = named_.find(name);
  auto out = std::make_shared<Tenant>(it != named_.end() ? it->second : defaults_);
  out->name = name;
  return out;
}

}  // namespace sandgate::auth
