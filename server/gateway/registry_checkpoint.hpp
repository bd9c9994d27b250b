#pragma once
// Restart survival's wiring: the session registry saved to the state directory (on a timer,
// only when it changed, so that a SIGKILL loses at most the sandboxes that were live, never the
// registry; and once more at a graceful stop), and read back when a gateway starts with the
// same --state-dir and --replica-name.
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <functional>
#include <mutex>
#include <optional>
#include <string>

#include "session/registry.hpp"
#include "session/state_store.hpp"

namespace sandgate::server {

class RegistryCheckpoint {
 public:
  RegistryCheckpoint(boost::asio::any_io_executor executor, session::Registry& registry,
                     std::string dir);

  // Writes the registry when it differs from what was last written; false when that failed
  // (logged). Nothing once finish() has written.
  bool write_if_changed();
  // write_if_changed every `interval` until finish().
  boost::asio::awaitable<void> run(std::chrono::milliseconds interval);
  // The last write, at a graceful stop (after idle sandboxes were hibernated): the sessions
  // are released next, and nothing after this may overwrite what it wrote.
  bool finish();

 private:
  bool write_locked();

  session::Registry& registry_;
  const std::string dir_;
  boost::asio::steady_timer timer_;
  std::mutex mutex_;
  std::string last_;  // what the file holds
  bool finished_ = false;
};

// At start, before serving: reads <store dir>/sessions.json and serves its sessions again
// (`tenant_of`: a tenant's current policy, nullopt when it is gone), keeping their archives
// and removing every other one. A missing, torn, foreign or other replica's file is ignored
// (with a warning: every archive is then removed, as without a saved registry).
void restore_saved_sessions(
    session::Registry& registry, session::StateStore& store,
    const std::function<std::optional<session::TenantPolicy>(const std::string&)>& tenant_of);

}  // namespace sandgate::server
