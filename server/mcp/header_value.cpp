#include "header_value.hpp"

#include "common/base64.hpp"

namespace sandgate::server {

std::optional<std::string> decode_header_value(std::string_view header) {
  constexpr std::string_view open = "=?base64?", close = "?=";
  if (header.size() >= open.size() + close.size() && header.substr(0, open.size()) == open &&
      header.substr(header.size() - close.size()) == close)
    return base64_decode(header.substr(open.size(), header.size() - open.size() - close.size()));
  return std::string(header);
}

}  // namespace sandgate::server
