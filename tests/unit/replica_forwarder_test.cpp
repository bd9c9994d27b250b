// Forwarding to the replica a session id names (server/mcp/replica_forwarder): the peer URL
// template and the replica names it may take are checked at start, and the forwarder never
// builds a URL from a name that reads as a number.
#include "server/mcp/replica_forwarder.hpp"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "server/gateway/config.hpp"
#include "session/session_id.hpp"

using namespace sandgate;
using namespace sandgate::server;

namespace {
ParseOutcome parse_flags(std::vector<std::string> args) {
  std::vector<char*> argv{const_cast<char*>("sandgate")};
  for (auto& a : args) argv.push_back(a.data());
  std::string token = "SANDGATE_TOKEN=t";
  char* envp[] = {token.data(), nullptr};
  return parse_config(static_cast<int>(argv.size()), argv.data(), envp);
}
}  // namespace

TEST_CASE("a session id cannot steer forwarding to an address the operator did not name",
          "[unit][transport][replicas]") {
  SECTION("a peer URL template needs a fixed DNS suffix after {replica}") {
    for (std::string bad :
         {"http://{replica}:8080", "http://{replica}", "http://{replica}./x",
          "http://{replica}.:80", "http://10.0.0.{replica}:80", "http://{replica}.10.0.0.1",
          "http://{replica}.1:8080", "http://x.{replica}.svc", "http://{replica}.svc:80x",
          "http://{replica}.a..b", "http://{replica}.svc/{replica}", "http://evil@{replica}.svc",
          "http://h/{replica}", "https://{replica}.svc", "http://{replica}.Svc"}) {
      INFO(bad);
      auto r = parse_flags({"--peer-url-template", bad});
      CHECK_FALSE(r.config);
      CHECK(r.message.find("--peer-url-template") != std::string::npos);
    }
    for (std::string good :
         {"http://{replica}.sandgate-peers:8080", "http://{replica}.sandgate-peers.ns.svc/",
          "http://sandgate-{replica}.peers", "http://{replica}.peers.example.com:80/base"}) {
      INFO(good);
      CHECK(parse_flags({"--peer-url-template", good}).config);
    }
  }
  SECTION("replica names that read as numbers are refused at start and in session ids") {
    for (std::string name : {"2130706433", "0x7f000001", "0x", "017700000001", "-a", "a-"}) {
      INFO(name);
      CHECK_FALSE(parse_flags({"--replica-name", name}).config);
      CHECK_FALSE(session::looks_like_session_id(name + "." + std::string(32, 'a')));
    }
    for (std::string name : {"sandgate-0", "a", "0xz", "7a", "b0x1"}) {
      INFO(name);
      CHECK(parse_flags({"--replica-name", name}).config);
      CHECK(session::looks_like_session_id(name + "." + std::string(32, 'a')));
    }
  }
  SECTION("the forwarder never builds a URL from a numeric name") {
    McpEndpointConfig c;
    c.replica_name = "a";
    c.peers.url_template = "http://{replica}.peers:8080";
    ReplicaForwarder forwarder(c);
    CHECK(forwarder.peer_for("b." + std::string(32, 'f')) == "http://b.peers:8080");
    CHECK_FALSE(forwarder.peer_for("2130706433." + std::string(32, 'f')));
    CHECK_FALSE(forwarder.peer_for("0x7f000001." + std::string(32, 'f')));
  }
}
