#pragma once
// The messages one request sends before and with its answer: notifications (progress, log
// messages) and, last, the answer itself. Producers post from any thread; the one reader,
// the response writer, awaits them in order on its strand. Nothing posted is lost except
// notifications beyond kMaxWaiting unsent ones or kMaxWaitingBytes of them (a producer
// outrunning a client that does not read: what waits for it is bounded in count and in
// bytes); the answer is never dropped. A notification is serialised once, when posted.
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>

#include "server/tools/tool.hpp"

namespace sandgate::server {

class Outbox : public std::enable_shared_from_this<Outbox> {
 public:
  static constexpr std::size_t kMaxWaiting = 256;
  static constexpr std::size_t kMaxWaitingBytes = 1u << 20;
  struct Item {
    nlohmann::json answer;     // null when the request gets none (cancelled)
    std::string notification;  // serialised; for a notification (is_answer false)
    bool is_answer = false;
  };
  // `strand`: where the reader runs.
  explicit Outbox(boost::asio::any_io_executor strand) : signal_(strand) {}

  // False when the message was not taken (the answer is in, or the unsent ones are at their
  // count or bytes).
  bool post(const nlohmann::json& notification);
  void finish(nlohmann::json answer);
  boost::asio::awaitable<Item> next();

 private:
  void wake();
  std::mutex mutex_;
  std::deque<std::string> waiting_;
  std::size_t waiting_bytes_ = 0;
  std::optional<nlohmann::json> answer_;
  boost::asio::steady_timer signal_;  // waited on by the reader, cancelled to wake it
};

// A request's CallEvents: notifications formatted for it, posted to its outbox.
class RequestEvents final : public CallEvents {
 public:
  // `progress_token`: null when the request asked for no progress. `min_log_level`: the index
  // of the lowest level to send (0 = debug), or nullopt to send no log messages.
  // `ask`: sends a request to the client and waits for its answer (2025 sessions); null where
  // the era has no server-to-client requests.
  using Ask =
      std::function<boost::asio::awaitable<nlohmann::json>(Outbox&, std::string, nlohmann::json)>;
  RequestEvents(std::shared_ptr<Outbox> outbox, nlohmann::json progress_token,
                std::optional<int> min_log_level, Ask ask = nullptr)
      : outbox_(std::move(outbox)),
        token_(std::move(progress_token)),
        min_log_level_(min_log_level),
        ask_(std::move(ask)) {}

  bool wants_progress() const override { return !token_.is_null(); }
  void progress(double progress, std::optional<double> total, std::string message) override;
  void log(std::string_view level, nlohmann::json data) override;
  boost::asio::awaitable<nlohmann::json> ask_client(std::string method,
                                                    nlohmann::json params) override;
  void notify(std::string method, nlohmann::json params) override;

 private:
  std::shared_ptr<Outbox> outbox_;
  nlohmann::json token_;
  std::optional<int> min_log_level_;
  Ask ask_;
  std::mutex mutex_;
  double last_progress_ = -1;  // progress must increase
};

// The syslog levels MCP uses, lowest first; -1 for an unknown name.
int log_level_index(std::string_view level);

}  // namespace sandgate::server
