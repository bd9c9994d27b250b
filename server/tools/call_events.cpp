#include "tool.hpp"

namespace sandgate::server {

boost::asio::awaitable<nlohmann::json> CallEvents::ask_client_all(nlohmann::json requests) {
  nlohmann::json answers = nlohmann::json::object();
  if (!requests.is_object()) co_return answers;
  for (auto& [key, request] : requests.items()) {
    std::string method = request.value("method", std::string());
    nlohmann::json params = request.contains("params") ? request["params"] : nlohmann::json();
    nlohmann::json answer = co_await ask_client(std::move(method), std::move(params));
    answers[key] = std::move(answer);
  }
  co_return answers;
}

}  // namespace sandgate::server
