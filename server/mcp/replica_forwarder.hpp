#pragma once
// Several replicas: a session or sandbox handle lives on the replica that created it (its id
// names that replica).
// A request for another replica's session is forwarded there — POST, GET and DELETE, with
// streamed (SSE) responses relayed piece by piece — so any replica can take any request and a
// load balancer needs no stickiness. A replica that is gone answers 404: the client
// re-initializes, as the transport prescribes for an ended session.
#include <boost/asio/awaitable.hpp>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "common/cancel_signal.hpp"
#include "server/http/http_types.hpp"
#include "server/mcp/mcp_config.hpp"

namespace sandgate::server {

constexpr const char* kForwardedHeader = "X-Sandgate-Forwarded";

class ReplicaForwarder {
 public:
  explicit ReplicaForwarder(const McpEndpointConfig& config);

  // The base URL of the replica holding a session, sandbox handle or task named `id` (each
  // names the replica that minted it), when that is another, known replica.
  std::optional<std::string> peer_for(std::string_view id) const;
  // The peer's answer, relayed; nothing when the peer could not be reached or did not answer
  // (the caller decides what the client gets: unreachable() for a session). `cancel` fires
  // when the client goes away: the connection to the peer is closed, so that the peer sees
  // its client go too.
  boost::asio::awaitable<std::optional<Reply>> forward(const Request& request,
                                                       const std::string& peer_url,
                                                       std::shared_ptr<CancelSignal> cancel);
  // For a session whose replica cannot be reached. Where replicas keep their sessions across a
  // restart (a --state-dir, as every replica of one deployment has), the owner is most likely
  // restarting: 503 with Retry-After, so that the client retries instead of starting over and
  // losing the session. Without one, the session is gone with its replica: 404, and the
  // client initializes a new one (as the transport prescribes for an ended session).
  Reply unreachable(const Request& request) const;

 private:
  std::string self_;
  std::string secret_;  // the deployment's peer secret, sent with each forward ("" for none)
  bool owners_keep_sessions_;
  std::map<std::string, std::string, std::less<>> peers_;
  std::string url_template_;
  std::chrono::seconds response_wait_;
};

}  // namespace sandgate::server
