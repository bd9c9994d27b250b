#pragma once
// Requests the server sends a 2025-era client in the middle of answering one of its requests
// (sampling/createMessage, elicitation/create): each goes out on that request's stream, and the
// client POSTs its response to the session like any message. Ids are the server's own, unique
// across sessions; a response is taken only from the session that was asked.
#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <unordered_map>

#include "outbox.hpp"

namespace sandgate::server {

class ClientRequests {
 public:
  // Sends the request through `outbox` and waits for the session's response, at most
  // `patience`: {"result": …} or {"error": …}.
  // `outbox` is used only before the first suspension (the caller's events own it).
  boost::asio::awaitable<nlohmann::json> ask(Outbox& outbox, std::string session_id,
                                             std::string method, nlohmann::json params,
                                             std::chrono::seconds patience);
  // A response POSTed to `session_id` ({"result": …} or {"error": …}, as jsonrpc::parse gives
  // it); false when nothing of that session waits for its id.
  bool deliver(const std::string& session_id, const nlohmann::json& id,
               const nlohmann::json& outcome);

 private:
  struct Pending;
  std::mutex mutex_;
  std::uint64_t next_ = 1;
  std::unordered_map<std::string, std::shared_ptr<Pending>> pending_;  // by id, dumped
};

}  // namespace sandgate::server
