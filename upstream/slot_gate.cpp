#include "upstream/slot_gate.hpp"

#include <algorithm>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <vector>

namespace sandgate::upstream {
namespace asio = boost::asio;

std::uint32_t SlotGate::share_locked(const std::string& key) const {
  // The active keys: those holding, those waiting, and this one.
  std::uint32_t active = per_key_.count(key) || wanting_.count(key) ? 0 : 1;
  active += static_cast<std::uint32_t>(per_key_.size());
  for (const auto& [waiting, n] : wanting_)
    if (!per_key_.count(waiting)) ++active;
  return std::min(share_, std::max<std::uint32_t>(1, capacity_ / active));
}

std::uint32_t SlotGate::share_for(const std::string& key) const {
  std::lock_guard lock(mutex_);
  return share_locked(key);
}

bool SlotGate::try_take_locked(const std::string& key) {
  auto it = per_key_.find(key);
  std::uint32_t mine = it == per_key_.end() ? 0 : it->second;
  if (held_ >= capacity_ || mine >= share_locked(key)) return false;
  ++held_;
  ++per_key_[key];  // an entry only while the key holds a place
  return true;
}

asio::awaitable<SlotGate::Slot> SlotGate::acquire(std::string key,
                                                  std::chrono::steady_clock::time_point deadline) {
  auto executor = co_await asio::this_coro::executor;
  auto timer = std::make_shared<asio::steady_timer>(executor);
  // While this acquire waits its key counts as active (share_locked), whatever ends the wait: a
  // place, the deadline, or the coroutine's cancellation.
  struct Wanting {
    SlotGate* gate = nullptr;
    std::string key;
    ~Wanting() {
      if (gate) gate->stop_waiting(key);
    }
  } wanting;
  for (;;) {
    std::uint64_t me = 0;
    {
      std::lock_guard lock(mutex_);
      if (try_take_locked(key)) {
        if (wanting.gate && --wanting_[key] == 0) wanting_.erase(key);
        wanting.gate = nullptr;
        co_return Slot(shared_from_this(), key);
      }
      if (std::chrono::steady_clock::now() >= deadline) co_return Slot();
      if (!wanting.gate) {
        ++wanting_[key];
        wanting.gate = this;
        wanting.key = key;
      }
      me = ++next_waiter_;
      waiters_.push_back(Waiter{me, executor, timer});
    }
    timer->expires_at(
        std::min(deadline, std::chrono::steady_clock::now() + std::chrono::milliseconds(50)));
    auto [ec] = co_await timer->async_wait(asio::as_tuple(asio::use_awaitable));
    (void)ec;  // woken, looked again, or past the deadline: the loop decides
    std::lock_guard lock(mutex_);
    // A release may have taken it off the list already.
    waiters_.remove_if([me](const Waiter& w) { return w.id == me; });
  }
}

void SlotGate::release(const std::string& key) {
  std::vector<Waiter> woken;
  {
    std::lock_guard lock(mutex_);
    --held_;
    if (auto it = per_key_.find(key); it != per_key_.end() && --it->second == 0) per_key_.erase(it);
    woken.assign(waiters_.begin(), waiters_.end());
    waiters_.clear();
  }
  // Each timer is touched on its own executor only.
  for (auto& w : woken) asio::post(w.executor, [timer = w.timer] { timer->cancel(); });
}

void SlotGate::stop_waiting(const std::string& key) {
  std::lock_guard lock(mutex_);
  if (auto it = wanting_.find(key); it != wanting_.end() && --it->second == 0) wanting_.erase(it);
}

std::uint32_t SlotGate::held() const {
  std::lock_guard lock(mutex_);
  return held_;
}

}  // namespace sandgate::upstream
