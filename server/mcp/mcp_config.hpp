#pragma once
// The settings of the /mcp endpoint. OriginPolicy and ReplicaPeers are options of their own
// (defaults here; the gateway's option table writes into them); McpEndpointConfig is what the
// endpoint is built from, assembled by the gateway from those and other layers' settings
// (mcp_endpoint_config in server/gateway/config.cpp).
#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include "server/tasks/task_store.hpp"

namespace sandgate::server {

// Which browser origins and Host headers a request may carry (DNS rebinding), besides loopback.
struct OriginPolicy {
  std::vector<std::string> allowed_origins;
  std::vector<std::string> allowed_hosts;  // checked only while the gateway listens on loopback

  bool operator==(const OriginPolicy&) const = default;
};

// How to reach the other replicas of a deployment: by name, or by a URL template.
struct ReplicaPeers {
  std::vector<std::pair<std::string, std::string>> by_name;  // name -> http://host:port
  std::string url_template;                                  // "{replica}" is replaced
  std::string secret;  // --peer-secret-file: sent with each forwarded request; "" for none

  bool operator==(const ReplicaPeers&) const = default;
};

struct McpEndpointConfig {
  OriginPolicy origins;
  bool listening_on_loopback = true;  // the Host check applies (DNS rebinding)
  ReplicaPeers peers;
  std::string replica_name;           // this replica's; empty with one replica
  bool owners_keep_sessions = false;  // replicas keep sessions across restarts (--state-dir)
  std::chrono::seconds forward_wait{300 + 120};  // a forwarded call's longest answer
  TaskLimits tasks;
};

}  // namespace sandgate::server
