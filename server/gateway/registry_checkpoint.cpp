#include "server/gateway/registry_checkpoint.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "common/logging.hpp"
#include "session/saved_sessions.hpp"

namespace sandgate::server {
namespace asio = boost::asio;

RegistryCheckpoint::RegistryCheckpoint(asio::any_io_executor executor, session::Registry& registry,
                                       std::string dir)
    : registry_(registry), dir_(std::move(dir)), timer_(executor) {}

bool RegistryCheckpoint::write_locked() {
  std::string text, error;
  try {
    text = session::serialize(registry_.save());
  } catch (const std::exception& e) {
    // Out of memory, say: the previous checkpoint stays, and the next one tries again.
    log_event(LogLevel::error, "sessions_save_failed", {{"dir", dir_}, {"problem", e.what()}});
    return false;
  }
  if (text == last_) return true;
  if (!session::write_saved_registry(dir_, text, error)) {
    log_event(LogLevel::error, "sessions_save_failed", {{"dir", dir_}, {"problem", error}});
    return false;
  }
  last_ = std::move(text);
  return true;
}

bool RegistryCheckpoint::write_if_changed() {
  std::lock_guard writing(write_mutex_);
  {
    std::lock_guard lock(mutex_);
    if (finished_) return true;
  }
  return write_locked();
}

std::vector<std::shared_ptr<RegistryCheckpoint::Signal>> RegistryCheckpoint::take_waiters_locked(
    std::uint64_t served) {
  std::vector<std::shared_ptr<Signal>> done;
  std::erase_if(waiters_, [&](Waiter& w) {
    if (w.ask > served) return false;
    done.push_back(std::move(w.signal));
    return true;
  });
  return done;
}

bool RegistryCheckpoint::finish() {
  bool ok = false;
  std::vector<std::shared_ptr<Signal>> done;
  {
    // Whoever writes next sees finished_ once it holds the write lock: nothing overwrites this.
    std::lock_guard writing(write_mutex_);
    {
      std::lock_guard lock(mutex_);
      if (finished_) return true;
      finished_ = true;
    }
    ok = write_locked();
    std::lock_guard lock(mutex_);
    done = take_waiters_locked(asked_);
  }
  for (auto& signal : done) signal->try_send(boost::system::error_code{});
  wake_loop();
  return ok;
}

void RegistryCheckpoint::wake_loop() {
  // The timer belongs to the loop's strand: cancelled there, never from the caller's thread.
  asio::post(timer_.get_executor(), [this] { timer_.cancel(); });
}

RegistryCheckpoint::Round RegistryCheckpoint::write_round() {
  std::vector<std::shared_ptr<Signal>> done;
  {
    // The write lock only: askers (request threads) take mutex_ alone, never waiting on a disk.
    std::lock_guard writing(write_mutex_);
    std::uint64_t covers = 0;
    {
      std::lock_guard lock(mutex_);
      if (finished_) return Round::finished;
      covers = asked_;  // every ask so far is removed from the registry this write reads
    }
    // A failed write (logged) answers nobody: the loop tries again, and each asker's own bound
    // answers it meanwhile.
    if (!write_locked()) return Round::failed;
    std::lock_guard lock(mutex_);
    served_ = covers;
    done = take_waiters_locked(served_);
  }
  for (auto& signal : done) signal->try_send(boost::system::error_code{});
  return Round::written;
}

asio::awaitable<void> RegistryCheckpoint::run(std::chrono::milliseconds interval) {
  Round last = Round::written;
  for (;;) {
    bool asked = false;
    {
      std::lock_guard lock(mutex_);
      asked = asked_ > served_;
    }
    // On this strand a saved() that asks after the check cancels the wait registered here.
    if (!asked) {
      timer_.expires_after(interval);
      co_await timer_.async_wait(asio::as_tuple(asio::use_awaitable));
    } else {
      // Asked while the last write ran: a short pause gathers more askers into one write, so
      // that a stream of removals cannot keep this strand (which also meters) writing; after a
      // failed write a longer one, so that a broken disk is not retried in a tight loop.
      asio::steady_timer gap(timer_.get_executor(),
                             last == Round::failed ? kRetryAfterFailure : kGapBetweenWrites);
      co_await gap.async_wait(asio::as_tuple(asio::use_awaitable));
    }
    last = write_round();
    if (last == Round::finished) co_return;
  }
}

asio::awaitable<void> RegistryCheckpoint::saved() {
  using namespace asio::experimental::awaitable_operators;
  auto executor = co_await asio::this_coro::executor;
  auto signal = std::make_shared<Signal>(executor, 1);
  {
    std::lock_guard lock(mutex_);
    if (finished_) co_return;
    waiters_.push_back({++asked_, signal});
  }
  wake_loop();
  asio::steady_timer bound(executor, kSavedWait);
  auto answered = co_await (signal->async_receive(asio::as_tuple(asio::use_awaitable)) ||
                            bound.async_wait(asio::as_tuple(asio::use_awaitable)));
  if (answered.index() == 0) co_return;
  // Not saved in time (a slow or failing disk): this asker stops waiting, and its entry goes,
  // so that the waiters never outnumber the requests waiting now.
  std::lock_guard lock(mutex_);
  std::erase_if(waiters_, [&](const Waiter& w) { return w.signal == signal; });
}

void restore_saved_sessions(session::Registry& registry, session::StateStore& store,
                            const std::function<tenant::Terms(const std::string&)>& tenant_of) {
  std::string path = store.dir() + "/" + session::kSavedSessionsFile;
  auto ignored = [&](const std::string& problem) {
    log_event(LogLevel::warn, "saved_sessions_ignored", {{"file", path}, {"problem", problem}});
    store.adopt({});
  };
  auto file = session::read_saved_registry(store.dir());
  if (file.absent) {
    store.adopt({});
    return;
  }
  if (!file.text) return ignored(file.problem);
  auto parsed = session::parse_saved_registry(*file.text);
  if (!parsed.registry) return ignored(parsed.problem);
  if (parsed.registry->replica != registry.replica_name())
    return ignored("it was written by replica '" + parsed.registry->replica +
                   "', and this gateway is '" + registry.replica_name() + "'");
  if (parsed.skipped > 0)
    log_event(LogLevel::warn, "saved_sessions_skipped",
              {{"file", path}, {"entries", parsed.skipped}, {"first_problem", parsed.problem}});
  auto report = registry.restore(*parsed.registry, tenant_of);
  std::size_t archives = store.adopt(report.ids, report.tenants);
  log_event(LogLevel::info, "sessions_restored",
            {{"sessions", report.sessions},
             {"handles", report.handles},
             {"with_sandbox", report.with_sandbox},
             {"archives", archives},
             {"dropped_unknown_tenant", report.unknown_tenant},
             {"dropped_expired", report.expired},
             {"dropped_over_cap", report.over_cap},
             {"archives_removed", store.left_over()}});
}

}  // namespace sandgate::server
