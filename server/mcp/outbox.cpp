#include "outbox.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "common/json_dump.hpp"
#include "jsonrpc.hpp"

namespace sandgate::server {
namespace asio = boost::asio;
using nlohmann::json;

bool Outbox::post(const json& notification) {
  {
    std::lock_guard lock(mutex_);
    if (answer_ || waiting_.size() >= kMaxWaiting || waiting_bytes_ >= kMaxWaitingBytes)
      return false;
  }
  std::string text = dump_json(notification);
  {
    std::lock_guard lock(mutex_);
    // One larger than the whole budget still goes out when nothing else waits (its size is
    // its producer's bound), so that no message can never be sent.
    if (answer_ || waiting_.size() >= kMaxWaiting ||
        (!waiting_.empty() && waiting_bytes_ + text.size() > kMaxWaitingBytes))
      return false;
    waiting_bytes_ += text.size();
    waiting_.push_back(std::move(text));
  }
  wake();
  return true;
}

void Outbox::finish(json answer) {
  {
    std::lock_guard lock(mutex_);
    if (answer_) return;
    answer_ = std::move(answer);
  }
  wake();
}

void Outbox::wake() {
  // The timer belongs to the reader's strand: cancelled there, after the reader has either
  // seen the new item or started waiting (it checks and starts waiting in one strand step).
  asio::post(signal_.get_executor(), [self = shared_from_this()] { self->signal_.cancel(); });
}

asio::awaitable<Outbox::Item> Outbox::next() {
  for (;;) {
    {
      std::lock_guard lock(mutex_);
      if (!waiting_.empty()) {
        Item item{nullptr, std::move(waiting_.front()), false};
        waiting_.pop_front();
        waiting_bytes_ -= item.notification.size();
        co_return item;
      }
      if (answer_) co_return Item{*answer_, {}, true};
    }
    signal_.expires_at(asio::steady_timer::time_point::max());
    co_await signal_.async_wait(asio::as_tuple(asio::use_awaitable));
  }
}

int log_level_index(std::string_view level) {
  static constexpr std::string_view levels[] = {"debug", "info",     "notice", "warning",
                                                "error", "critical", "alert",  "emergency"};
  for (int i = 0; i < 8; ++i)
    if (levels[i] == level) return i;
  return -1;
}

void RequestEvents::progress(double progress, std::optional<double> total, std::string message) {
  if (token_.is_null()) return;
  {
    std::lock_guard lock(mutex_);
    if (progress <= last_progress_) return;
    last_progress_ = progress;
  }
  json params = {{"progressToken", token_}, {"progress", progress}};
  if (total) params["total"] = *total;
  if (!message.empty()) params["message"] = std::move(message);
  outbox_->post(jsonrpc::notification("notifications/progress", std::move(params)));
}

void RequestEvents::log(std::string_view level, json data) {
  int index = log_level_index(level);
  if (!min_log_level_ || index < *min_log_level_) return;
  outbox_->post(jsonrpc::notification("notifications/message",
                                      {{"level", std::string(level)}, {"data", std::move(data)}}));
}

void RequestEvents::notify(std::string method, json params) {
  outbox_->post(jsonrpc::notification(method, std::move(params)));
}

asio::awaitable<json> RequestEvents::ask_client(std::string method, json params) {
  if (!ask_)
    co_return json{{"error",
                    {{"code", jsonrpc::method_not_found},
                     {"message", "this protocol revision has no server-to-client requests"}}}};
  co_return co_await ask_(*outbox_, std::move(method), std::move(params));
}

}  // namespace sandgate::server
