#pragma once
// The gateway's side of code mode (issue #45): the upstreams file read at start (a bad one
// refuses the start) and on SIGHUP (a bad one keeps the old set), and the registry told to give
// the tenants that name them tool channels, their calls counted in /metrics.
#include <boost/asio/any_io_executor.hpp>
#include <memory>
#include <string>

#include "server/gateway/config.hpp"
#include "server/metrics/metrics.hpp"
#include "session/registry.hpp"
#include "upstream/upstreams.hpp"

namespace sandgate::server {

struct OpenedUpstreams {
  std::shared_ptr<upstream::Upstreams> upstreams;  // null without --upstreams
  std::string fatal;                               // why the gateway cannot start, when set
};

// Before sessions are restored: theirs get channels too.
OpenedUpstreams open_upstreams(const Config& config, boost::asio::any_io_executor executor,
                               session::Registry& registry, Metrics& metrics);
// SIGHUP: the file again; one that cannot be used leaves the set as it was (logged).
void reload_upstreams(const Config& config, upstream::Upstreams& upstreams);

}  // namespace sandgate::server
