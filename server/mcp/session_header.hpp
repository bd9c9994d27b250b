#pragma once
// The Mcp-Session-Id header, read in one place with its shape checked: ids from clients are
// hostile, and nothing looks one up, logs it or routes by it before this check.
#include <string>

#include "server/http/http_types.hpp"

namespace sandgate::server {

constexpr const char* kSessionHeader = "Mcp-Session-Id";

struct SessionHeader {
  bool present = false;  // the header was sent (maybe empty or malformed)
  std::string id;        // set only when it has the shape of one of our session ids
};
SessionHeader session_header(const Request& request);

}  // namespace sandgate::server
