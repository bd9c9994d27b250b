#pragma once
// SIGINT/SIGTERM in two phases. Phase one: not ready, stop accepting, then either end every
// session (running calls end with a tool error) or — where sessions survive restarts — hibernate
// the idle sandboxes, write the registry and let the sessions go with their archives kept.
// Phase two, once no connection is left or the grace period is over: stop the io_context.
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <functional>

#include "sandbox/host.hpp"
#include "server/gateway/registry_checkpoint.hpp"
#include "server/http/http_server.hpp"
#include "session/registry.hpp"

namespace sandgate::server {

class GracefulShutdown {
 public:
  struct Parts {
    HttpServer& server;
    session::Registry& registry;
    sandbox::SandboxHost& host;
    RegistryCheckpoint* checkpoint;  // null where sessions do not survive a restart
  };
  // `on_begin` runs first when the signal comes (e.g. to stop waiting for SIGHUP).
  GracefulShutdown(boost::asio::io_context& io, boost::asio::any_io_executor background,
                   Parts parts, std::chrono::seconds grace, std::function<void()> on_begin);
  // Waits for SIGINT or SIGTERM.
  void arm();

 private:
  void begin(int signal);
  void hibernate_then_release();
  void wait_for_drain();

  boost::asio::io_context& io_;
  boost::asio::any_io_executor background_;
  Parts parts_;
  std::chrono::seconds grace_period_;
  std::function<void()> on_begin_;
  boost::asio::signal_set signals_;
  boost::asio::steady_timer grace_;
  boost::asio::steady_timer drain_poll_;
};

}  // namespace sandgate::server
