#pragma once
// Whether a host names this machine's loopback: the listener's bind (--no-auth is refused
// elsewhere), the Origin and Host checks, and the one case where an issuer may be plain http.
#include <string_view>

namespace sandgate {

// An IP literal of the loopback range, or exactly `localhost` (brackets around IPv6 allowed).
bool is_loopback_host(std::string_view host);

}  // namespace sandgate
