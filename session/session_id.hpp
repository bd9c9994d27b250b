#pragma once
// Session ids: 128 bits from the OpenSSL CSPRNG, as 32 lowercase hex characters (visible ASCII,
// as the transport requires).
#include <string>
#include <string_view>

namespace sandgate::session {

std::string new_session_id();
// Cheap shape check before any lookup (ids from clients are hostile).
bool looks_like_session_id(std::string_view id);
// The first characters, safe to log.
std::string_view log_prefix(std::string_view id);

}  // namespace sandgate::session
