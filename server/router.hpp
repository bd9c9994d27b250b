#pragma once
// Which answer a whole, parsed request gets: /mcp goes to the MCP endpoint; /healthz, /readyz
// and /metrics are answered here. Knows nothing of sockets, so it can be driven in memory (the
// HTTP fuzz target does).
#include <atomic>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "http_types.hpp"
#include "mcp_endpoint.hpp"
#include "metrics.hpp"

namespace sandgate::server {

class Router {
 public:
  using GaugeSource = std::function<Gauges()>;
  Router(McpEndpoint& endpoint, Metrics& metrics, GaugeSource gauges);

  // Called with the headers alone, before any body is read or 100 Continue sent: the answer
  // to a request that can be refused already (the /mcp endpoint's Origin/Host, token and
  // method rules; a non-GET elsewhere), or nothing. route() gets the whole request after.
  std::optional<Response> admit(const Request& head) const;
  boost::asio::awaitable<Reply> route(const Request& request);

  void set_ready(bool ready) { ready_ = ready; }
  bool ready() const { return ready_; }
  void set_not_ready_reason(std::string reason);
  // Lines /readyz adds, ready or not: a weaker isolation the gateway runs with.
  void set_degraded_notes(std::vector<std::string> notes);
  void set_stopping() { stopping_ = true; }
  bool stopping() const { return stopping_; }

  // A plain-text response in the request's HTTP version.
  static Response plain(const Request& request, http::status status, std::string body,
                        const char* content_type = "text/plain; charset=utf-8");

 private:
  McpEndpoint& endpoint_;
  Metrics& metrics_;
  GaugeSource gauges_;
  std::atomic<bool> ready_{false};
  std::atomic<bool> stopping_{false};
  mutable std::mutex mutex_;
  std::string not_ready_reason_ = "starting: the sandbox self-test has not finished";
  std::string degraded_;  // "degraded: <note>\n" per note
};

}  // namespace sandgate::server
