#pragma once
// The gateway's side of environments (issue #43): the definitions file read at start (a bad one
// refuses the start) and on SIGHUP (a bad one keeps the old set), the layer store opened, and
// /readyz held at 503 until every environment is built or failed.
#include <boost/asio/any_io_executor.hpp>
#include <memory>
#include <string>

#include "environment/environments.hpp"
#include "server/gateway/config.hpp"
#include "server/gateway/gateway_tokens.hpp"
#include "server/http/http_server.hpp"
#include "server/metrics/metrics.hpp"
#include "session/registry.hpp"

namespace sandgate::server {

struct OpenedEnvironments {
  std::shared_ptr<environment::Environments> environments;  // null without --environments
  std::string fatal;  // why the gateway cannot start, when set
};

// Reads the definitions, opens the store and starts the builds (on `executor`).
// `metrics` counts the builds. A tokens-file tenant naming an environment the file does not
// define (or any but `base` without a file) refuses the start: it would fail every call.
OpenedEnvironments open_environments(const Config& config, boost::asio::any_io_executor executor,
                                     sandbox::SandboxHost& host, session::Registry& registry,
                                     Metrics& metrics, const Credentials& credentials);
// The first tokens-file tenant naming an environment not in `defined` (`base` always is), as a
// sentence; "" when there is none.
std::string unknown_environment(const Credentials& credentials,
                                const std::vector<std::string>& defined, bool file_given);
// The store's directory: --environments-dir, else <--state-dir>/environments; "" when neither.
std::string environments_store_dir(const Config& config);
// Each ready environment's pool statistics, by its name (for /metrics).
std::vector<std::pair<std::string, PoolStats>> environment_pool_stats(
    const environment::Environments& environments, const sandbox::SandboxHost& host);
// SIGHUP: the definitions again; a file that cannot be used leaves them as they were (logged).
// A tenant naming an environment no longer (or not yet) defined is logged as a warning: its
// calls get a tool error saying so.
void reload_environments(const Config& config, const Credentials& credentials,
                         environment::Environments& environments);
// Once the sandbox self-test passed: ready when every environment is built or failed, and not
// before (a rolling update sends no traffic to a replica still building).
void ready_when_environments_settled(std::shared_ptr<const environment::Environments> environments,
                                     HttpServer& server, boost::asio::any_io_executor executor);

}  // namespace sandgate::server
