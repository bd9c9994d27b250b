#include "server/gateway/shutdown.hpp"

#include <signal.h>

#include <boost/asio/co_spawn.hpp>

#include "common/logging.hpp"

namespace sandgate::server {
namespace asio = boost::asio;

GracefulShutdown::GracefulShutdown(asio::io_context& io, asio::any_io_executor background,
                                   Parts parts, std::chrono::seconds grace,
                                   std::function<void()> on_begin)
    : io_(io),
      background_(std::move(background)),
      parts_(parts),
      grace_period_(grace),
      on_begin_(std::move(on_begin)),
      signals_(io, SIGINT, SIGTERM),
      grace_(io),
      drain_poll_(io) {}

void GracefulShutdown::arm() {
  signals_.async_wait([this](const boost::system::error_code& ec, int signal) {
    if (!ec) begin(signal);
  });
}

void GracefulShutdown::begin(int signal) {
  log_event(LogLevel::info, "shutdown", {{"signal", signal}, {"sessions", parts_.registry.size()}});
  parts_.server.set_ready(false);
  // No more ready sandboxes: their slots and CPU go to hibernating the sessions' own.
  parts_.host.stop_pool();
  if (on_begin_) on_begin_();
  parts_.server.stop_accepting();
  grace_.expires_after(grace_period_);
  if (parts_.checkpoint) {
    hibernate_then_release();
    return;
  }
  parts_.registry.end_all();
  parts_.host.shutdown();
  wait_for_drain();
}

// Restart survival: idle sandboxes are hibernated (within half the grace period), the registry
// is written, and only then are the sessions let go of, their archives kept. Calls in flight
// end as without it.
void GracefulShutdown::hibernate_then_release() {
  auto deadline = std::chrono::steady_clock::now() + grace_period_ / 2;
  asio::co_spawn(background_, parts_.registry.hibernate_all_idle(deadline),
                 [this](std::exception_ptr, std::size_t hibernated) {
                   bool saved = parts_.checkpoint->finish();
                   log_event(LogLevel::info, "sessions_saved",
                             {{"sessions", parts_.registry.size()},
                              {"hibernated_now", hibernated},
                              {"written", saved}});
                   parts_.registry.release_all("the gateway is restarting");
                   parts_.host.shutdown();
                   wait_for_drain();
                 });
}

// Busy connections finish their request first; the io_context stops once none is left or the
// grace period is over.
void GracefulShutdown::wait_for_drain() {
  if (parts_.server.open_connections() == 0 ||
      std::chrono::steady_clock::now() >= grace_.expiry()) {
    io_.stop();
    return;
  }
  drain_poll_.expires_after(std::chrono::milliseconds(50));
  drain_poll_.async_wait([this](const boost::system::error_code& ec) {
    if (!ec) wait_for_drain();
  });
}

}  // namespace sandgate::server
