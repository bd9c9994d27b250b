// The idle sweep: ending sessions nobody used for the idle timeout, and hibernating live
// sandboxes with no call for hibernate_after, on a timer.
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "registry.hpp"

namespace sandgate::session {
namespace asio = boost::asio;

std::string Registry::idle_why() const {
  auto minutes = std::chrono::duration_cast<std::chrono::minutes>(config_.idle_timeout).count();
  return minutes > 0 ? "it was idle for " + std::to_string(minutes) + " min"
                     : "it was idle for " + std::to_string(config_.idle_timeout.count()) + " s";
}

std::size_t Registry::sweep_idle() {
  auto now = Session::Clock::now();
  std::vector<std::shared_ptr<Session>> expired;
  {
    std::lock_guard lock(mutex_);
    for (auto it = sessions_.begin(); it != sessions_.end();) {
      auto& s = it->second;
      bool idle = !s->busy() && now - s->last_used() >= config_.idle_timeout;
      if (idle || s->ended()) {
        expired.push_back(s);
        it = forget_locked(it, idle ? idle_why() : std::string("it ended"));
      } else {
        ++it;
      }
    }
  }
  for (auto& s : expired) s->end(idle_why());
  return expired.size();
}

asio::awaitable<void> Registry::sweep_loop() {
  for (;;) {
    sweep_timer_.expires_after(config_.sweep_interval);
    co_await sweep_timer_.async_wait(asio::as_tuple(asio::use_awaitable));
    {
      std::lock_guard lock(mutex_);
      if (stopped_) co_return;
    }
    sweep_idle();
    co_await hibernate_idle();
    ++sweeps_;
  }
}

asio::awaitable<std::size_t> Registry::hibernate_idle() {
  if (!store_ || config_.hibernate_after.count() == 0) co_return 0;
  auto now = Session::Clock::now();
  std::size_t done = 0;
  for (auto& s : snapshot()) {
    if (s->busy() || !s->has_live_sandbox() || now - s->last_used() < config_.hibernate_after)
      continue;
    {
      std::lock_guard lock(mutex_);
      if (stopped_) co_return done;
    }
    std::string why;
    if (co_await s->hibernate(&why)) {
      ++done;
      ++idle_hibernations_;
    } else if (on_hibernate_failed && !why.empty())
      on_hibernate_failed(store_->file_name(s->id()), why);
  }
  co_return done;
}

}  // namespace sandgate::session
