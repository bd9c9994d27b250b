#include "client_requests.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <optional>

namespace sandgate::server {
namespace asio = boost::asio;
using nlohmann::json;

struct ClientRequests::Pending {
  explicit Pending(asio::any_io_executor executor, std::string owner)
      : timer(executor), session_id(std::move(owner)) {}
  asio::steady_timer timer;  // cancelled when the response arrives
  std::string session_id;
  std::optional<json> response;  // under the ClientRequests mutex
};

asio::awaitable<json> ClientRequests::ask(Outbox& outbox, std::string session_id,
                                          std::string method, json params,
                                          std::chrono::seconds patience) {
  auto pending = std::make_shared<Pending>(co_await asio::this_coro::executor, session_id);
  json id;
  {
    std::lock_guard lock(mutex_);
    id = "sandgate-" + std::to_string(next_++);
    pending_[id.dump()] = pending;
  }
  if (!outbox.post({{"jsonrpc", "2.0"},
                    {"id", id},
                    {"method", std::move(method)},
                    {"params", std::move(params)}})) {
    std::lock_guard lock(mutex_);
    pending_.erase(id.dump());
    co_return json{{"error", {{"code", -32603}, {"message", "the request could not be sent"}}}};
  }
  pending->timer.expires_after(patience);
  co_await pending->timer.async_wait(asio::as_tuple(asio::use_awaitable));
  std::lock_guard lock(mutex_);
  pending_.erase(id.dump());
  if (!pending->response)
    co_return json{{"error", {{"code", -32001}, {"message", "the client did not answer in time"}}}};
  co_return *pending->response;
}

bool ClientRequests::deliver(const std::string& session_id, const json& id, const json& outcome) {
  std::shared_ptr<Pending> pending;
  {
    std::lock_guard lock(mutex_);
    auto it = pending_.find(id.dump());
    if (it == pending_.end() || it->second->session_id != session_id || it->second->response)
      return false;
    pending = it->second;
    pending->response = outcome;
  }
  // The timer belongs to the asking coroutine's strand: cancelled there.
  asio::post(pending->timer.get_executor(), [pending] { pending->timer.cancel(); });
  return true;
}

}  // namespace sandgate::server
