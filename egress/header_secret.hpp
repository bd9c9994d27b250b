#pragma once
// A secret the egress proxy applies for a tenant (issue #44): every request its sandboxes send to
// the secret's destination gets the header `header` set to `value`, replacing any header of that
// name the sandbox sent, so that the sandbox never holds the value. Named by the operator's
// secrets file (secrets/secrets_file.hpp), held by a tenant with `secrets=<name>[,…]`.
//
// `value` is never logged, never put in an error, and never sent anywhere but to the destination.
#include <cstdint>
#include <string>
#include <string_view>

#include "egress/allow_list.hpp"

namespace sandgate::egress {

struct HeaderSecret {
  std::string name;
  // One entry: an exact DNS name or IP literal (no wildcard), with a port or the scheme's default
  // (443 through CONNECT, 80 for plain HTTP), matched as the allow-list matches.
  AllowList destination;
  std::string header;  // a header field name, as the operator wrote it
  std::string value;
  // Whether plain-HTTP requests get it too (`plain=yes`): the value then crosses the network in
  // the clear. Without it a plain request to the secret's host is refused, so that a sandbox
  // cannot make the proxy send the value unencrypted.
  bool plain_http = false;

  bool applies_to(std::string_view host, std::uint16_t port, std::uint16_t default_port) const {
    return destination.allows(host, port, default_port);
  }
};

}  // namespace sandgate::egress
