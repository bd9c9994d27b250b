#include "call_slots.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace sandgate::session {
namespace asio = boost::asio;

asio::awaitable<CallSlots::Permit> CallSlots::acquire(std::string tenant, std::size_t tenant_cap) {
  auto executor = co_await asio::this_coro::executor;
  std::shared_ptr<Signal> signal, displaced;
  {
    std::lock_guard lock(mutex_);
    auto admission = share_.arrive(tenant, tenant_cap);
    if (admission.kind == FairShare::Admission::Kind::run) co_return Permit(this, tenant);
    if (admission.kind == FairShare::Admission::Kind::refused) co_return Permit();
    signal = std::make_shared<Signal>(executor, 1);
    waiting_.emplace(admission.ticket, signal);
    if (admission.pushed_out) {
      auto it = waiting_.find(*admission.pushed_out);
      displaced = std::move(it->second);
      waiting_.erase(it);
    }
  }
  if (displaced) displaced->try_send(boost::system::error_code{}, false);
  auto [ec, granted] = co_await signal->async_receive(asio::as_tuple(asio::use_awaitable));
  // When granted, the slot was taken for us by release(): it is ours to give back.
  if (ec || !granted) co_return Permit();
  co_return Permit(this, std::move(tenant));
}

void CallSlots::release(const std::string& tenant) {
  std::shared_ptr<Signal> next;
  {
    std::lock_guard lock(mutex_);
    auto ticket = share_.finish(tenant);
    if (!ticket) return;
    auto it = waiting_.find(*ticket);
    next = std::move(it->second);
    waiting_.erase(it);
  }
  next->try_send(boost::system::error_code{}, true);
}

std::size_t CallSlots::waiting() const {
  std::lock_guard lock(mutex_);
  return share_.waiting();
}

std::size_t CallSlots::running(const std::string& tenant) const {
  std::lock_guard lock(mutex_);
  return share_.running(tenant);
}

}  // namespace sandgate::session
