// SandboxHost's meter: once per meter interval, every live sandbox samples its usage and
// enforces its spend cap and lifetime (Sandbox::check); ended ones are forgotten.
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "host.hpp"

namespace sandgate::sandbox {
namespace asio = boost::asio;

asio::awaitable<void> SandboxHost::meter_loop() {
  for (;;) {
    meter_timer_.expires_after(config_.meter_interval);
    co_await meter_timer_.async_wait(asio::as_tuple(asio::use_awaitable));
    {
      std::lock_guard lock(mutex_);
      if (stopped_) co_return;
      std::erase_if(live_, [](const auto& w) {
        auto s = w.lock();
        return !s || s->ended();
      });
    }
    for (const auto& s : snapshot()) s->check();
  }
}

}  // namespace sandgate::sandbox
