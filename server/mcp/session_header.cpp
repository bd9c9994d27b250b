#include "session_header.hpp"

#include "session/session_id.hpp"

namespace sandgate::server {

SessionHeader session_header(const Request& request) {
  SessionHeader header;
  auto field = request.find(kSessionHeader);
  // An empty header names no session: it is the same as none.
  if (field == request.end() || field->value().empty()) return header;
  header.present = true;
  if (session::looks_like_session_id(field->value())) header.id = std::string(field->value());
  return header;
}

}  // namespace sandgate::server
