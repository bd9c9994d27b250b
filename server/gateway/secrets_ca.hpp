#pragma once
// The egress proxy's TLS termination for hosts carrying a secret (issue #44), made at start when
// the gateway has a secrets file: its CA from --secrets-ca-cert/--secrets-ca-key, or kept in
// --state-dir (made there at first start), or, without a state dir, made in memory for this run.
#include <memory>

#include "egress/tls_termination.hpp"
#include "server/gateway/config.hpp"

namespace sandgate::server {

// Null without --secrets-file. Throws std::runtime_error saying why it cannot be made.
std::shared_ptr<egress::TlsTermination> open_tls_termination(const Config& config);

}  // namespace sandgate::server
