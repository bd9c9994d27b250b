#pragma once
// Restart survival's wiring: the session registry saved to the state directory (on a timer,
// only when it changed, so that a SIGKILL loses at most the sandboxes that were live, never the
// registry; at once when a client's removal waits for it; and once more at a graceful stop),
// and read back when a gateway starts with the same --state-dir and --replica-name.
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/experimental/concurrent_channel.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

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
  // write_if_changed every `interval` until finish(), and soon after each saved() asks.
  boost::asio::awaitable<void> run(std::chrono::milliseconds interval);
  // Returns once a checkpoint begun after this call has been written (one write serves every
  // caller waiting meanwhile), at finish(), or after kSavedWait whatever the disk does.
  boost::asio::awaitable<void> saved();
  static constexpr std::chrono::seconds kSavedWait{2};
  static constexpr std::chrono::milliseconds kGapBetweenWrites{10};
  static constexpr std::chrono::milliseconds kRetryAfterFailure{500};
  // The last write, at a graceful stop (after idle sandboxes were hibernated): the sessions
  // are released next, and nothing after this may overwrite what it wrote.
  bool finish();

 private:
  using Signal = boost::asio::experimental::concurrent_channel<void(boost::system::error_code)>;
  struct Waiter {
    std::uint64_t ask;  // the write that starts after this ask serves it
    std::shared_ptr<Signal> signal;
  };

  enum class Round { written, failed, finished };

  bool write_locked();  // holding write_mutex_
  // One round of the loop.
  Round write_round();
  // Ends the loop's wait now (a saved() asks, or finish() ended it).
  void wake_loop();
  // The waiters served by a write that began when `asked_` was `served`.
  std::vector<std::shared_ptr<Signal>> take_waiters_locked(std::uint64_t served);

  session::Registry& registry_;
  const std::string dir_;
  boost::asio::steady_timer timer_;
  // Held across a write (serialising the registry, fsync): only by the checkpoint's loop, a
  // write at stop and write_if_changed, never by a request thread.
  std::mutex write_mutex_;
  std::string last_;  // what the file holds (write_mutex_)
  // Held briefly by askers and writers alike, never across I/O.
  std::mutex mutex_;
  bool finished_ = false;
  std::uint64_t asked_ = 0;   // saved() calls so far
  std::uint64_t served_ = 0;  // asked_ when the last successful write began
  std::vector<Waiter> waiters_;
};

// At start, before serving: reads <store dir>/sessions.json and serves its sessions again
// (`tenant_of`: a tenant's current terms, null when it is gone), keeping their archives
// and removing every other one. A missing, torn, foreign or other replica's file is ignored
// (with a warning: every archive is then removed, as without a saved registry).
void restore_saved_sessions(session::Registry& registry, session::StateStore& store,
                            const std::function<tenant::Terms(const std::string&)>& tenant_of);

}  // namespace sandgate::server
