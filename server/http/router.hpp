#pragma once
// Which answer a whole, parsed request gets: /mcp goes to its Endpoint (the MCP one, which HTTP
// knows only as that interface); /healthz, /readyz, /metrics and the fixed documents given to
// serve_document (OAuth metadata) are answered here. Knows nothing of sockets, so it can be
// driven in memory (the HTTP fuzz target does).
#include <atomic>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "endpoint.hpp"
#include "http_types.hpp"
#include "server/metrics/metrics.hpp"

namespace sandgate::server {

class Router {
 public:
  using GaugeSource = std::function<Gauges()>;
  Router(Endpoint& mcp, Metrics& metrics, GaugeSource gauges);

  // Called with the headers alone, before any body is read or 100 Continue sent: the answer
  // to a request that can be refused already (the /mcp endpoint's own rules; a non-GET
  // elsewhere), or nothing. route() gets the whole request after.
  boost::asio::awaitable<std::optional<Response>> admit(const Request& head) const;
  boost::asio::awaitable<Reply> route(const Request& request, std::shared_ptr<CancelSignal> client);

  // A public document at `path` (GET, no credentials), readable by any web page: CORS allows
  // every origin, and an OPTIONS preflight is answered. Set up before serving starts.
  void serve_document(std::string path, std::string content_type, std::string body);

  void set_ready(bool ready) { ready_ = ready; }
  bool ready() const { return ready_; }
  void set_not_ready_reason(std::string reason);
  // Lines /readyz adds, ready or not: a weaker isolation the gateway runs with.
  void set_degraded_notes(std::vector<std::string> notes);
  void set_stopping() { stopping_ = true; }
  bool stopping() const { return stopping_; }

 private:
  struct Document {
    std::string content_type;
    std::string body;
  };
  const Document* document_at(std::string_view path) const;

  Endpoint& mcp_;
  Metrics& metrics_;
  std::map<std::string, Document, std::less<>> documents_;
  GaugeSource gauges_;
  std::atomic<bool> ready_{false};
  std::atomic<bool> stopping_{false};
  mutable std::mutex mutex_;
  std::string not_ready_reason_ = "starting: the sandbox self-test has not finished";
  std::string degraded_;  // "degraded: <note>\n" per note
};

}  // namespace sandgate::server
