#pragma once
// Content-Type as exactly one media type (RFC 9110 §8.3): `type/subtype *( OWS ";" OWS
// [ name=value ] )`. Splitting on commas, as for Accept, would let a browser's
// `text/plain;a=,application/json` — which it sends without a CORS preflight — pass as JSON.
#include <string_view>

namespace sandgate::server {

// True when `header` is one well-formed media type whose type/subtype is application/json
// (case-insensitive); parameters such as `charset=utf-8` are allowed, nothing else is.
bool is_json_content_type(std::string_view header);

}  // namespace sandgate::server
