#pragma once
// Percent-encoding (RFC 3986 §2.1): unreserved bytes (letters, digits, "-._~") as they are, and
// any byte listed in `also_plain`; every other byte as %XX, upper-case hex. A space is %20,
// never '+'. Used for sandbox file URIs and for form-encoded requests to an issuer.
#include <string>
#include <string_view>

namespace sandgate {

std::string percent_encode(std::string_view text, std::string_view also_plain = {});

}  // namespace sandgate
