#pragma once
// The gateway's side of code mode (issue #45): the upstreams file read at start (a bad one
// refuses the start) and on SIGHUP (a bad one keeps the old set), and the registry told to give
// the tenants that name them tool channels, their calls counted in /metrics.
#include <boost/asio/any_io_executor.hpp>
#include <memory>
#include <string>

#include "server/gateway/config.hpp"
#include "server/gateway/gateway_tokens.hpp"
#include "server/metrics/metrics.hpp"
#include "session/registry.hpp"
#include "upstream/upstreams.hpp"

namespace sandgate::server {

struct OpenedUpstreams {
  std::shared_ptr<upstream::Upstreams> upstreams;  // null without --upstreams
  std::string fatal;                               // why the gateway cannot start, when set
};

// Before sessions are restored: theirs get channels too. A tokens-file tenant naming an upstream
// the file does not define refuses the start (a typo would otherwise show only in its calls).
OpenedUpstreams open_upstreams(const Config& config, boost::asio::any_io_executor executor,
                               const Credentials& credentials, session::Registry& registry,
                               Metrics& metrics);
// The first tokens-file tenant that names an upstream `upstreams` lacks, said for the operator
// ("" when none does).
std::string unknown_upstream(const Credentials& credentials, const upstream::Upstreams& upstreams);
// SIGHUP: the file again; one that cannot be used leaves the set as it was (logged), and a
// tenant naming an upstream the new set lacks is logged (its calls of it are refused).
void reload_upstreams(const Config& config, const Credentials& credentials,
                      upstream::Upstreams& upstreams);

}  // namespace sandgate::server
