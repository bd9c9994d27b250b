#include "protocol_version.hpp"

namespace sandgate::server {

bool is_session_version(std::string_view version) {
  for (auto known : kSessionVersions)
    if (version == known) return true;
  return false;
}

bool is_stateless_version(std::string_view version) {
  for (auto known : kStatelessVersions)
    if (version == known) return true;
  return false;
}

}  // namespace sandgate::server
